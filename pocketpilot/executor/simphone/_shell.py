"""The device shell: parses what adb clients send and answers in the real tools' formats.

Only the commands clients of a phone actually issue are modelled (adbutils, uiautomator2 and
our executor), each printing what the real Android tool prints, including its quirks
(``am start`` exits 0 on errors; ``uiautomator dump`` says "hierchary").
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ._ui import dump_xml, render_png
from .backend import Intent, PhoneBackend, normalize_key

__all__ = ["ShellOutput", "run_shell"]

logger = logging.getLogger(__name__)

STDOUT, STDERR = 1, 2


@dataclass
class ShellOutput:
    """Chunks in the order they were written, the exit code, and whether a daemon was started."""

    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    code: int = 0
    daemon: str | None = None
    """Set when the command keeps running (``app_process`` of the uiautomator2 server)."""

    def out(self, data: str | bytes, fd: int = STDOUT) -> None:
        """Write to stdout (or stderr)."""
        self.chunks.append((fd, data.encode() if isinstance(data, str) else data))


def _split(cmdline: str) -> list[tuple[str, str]]:
    """Split on ; && || outside quotes -> [(separator before, segment)]."""
    out: list[tuple[str, str]] = []
    sep, buf, quote, i = ";", [], "", 0
    while i < len(cmdline):
        ch = cmdline[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"' and i + 1 < len(cmdline):
                buf.append(ch)
                i += 1
                ch = cmdline[i]
            buf.append(ch)
        elif ch in "'\"":
            quote = ch
            buf.append(ch)
        elif ch == ";" or cmdline.startswith("&&", i) or cmdline.startswith("||", i):
            out.append((sep, "".join(buf)))
            sep = ";" if ch == ";" else cmdline[i : i + 2]
            i += 1 if ch == ";" else 2
            buf = []
            continue
        else:
            buf.append(ch)
        i += 1
    out.append((sep, "".join(buf)))
    return [(s, seg.strip()) for s, seg in out if seg.strip()]


Handler = Callable[[PhoneBackend, list[str], ShellOutput], Awaitable[None] | None]


async def run_shell(phone: PhoneBackend, cmdline: str) -> ShellOutput:
    """Run a shell command line against the phone state."""
    result = ShellOutput()
    last = 0
    for sep, segment in _split(cmdline):
        if (sep == "&&" and last != 0) or (sep == "||" and last == 0):
            continue
        segment = segment.replace("$?", str(last))
        try:
            argv = shlex.split(segment)
        except ValueError:
            result.out(f"/system/bin/sh: syntax error: {segment}\n", STDERR)
            last = 2
            continue
        while argv and "=" in argv[0] and not argv[0].startswith("="):
            argv.pop(0)  # environment assignments (CLASSPATH=...)
        redirect: str | None = None
        cleaned: list[str] = []
        it = iter(argv)
        for arg in it:
            if arg in {"2>&1", "2>/dev/null", ">/dev/null", "</dev/null"}:
                continue
            if arg in {">", "2>"}:
                target = next(it, "")
                redirect = None if target == "/dev/null" or arg == "2>" else target
                continue
            if arg.startswith(">") and len(arg) > 1:
                redirect = arg[1:]
                continue
            cleaned.append(arg)
        if not cleaned:
            continue
        sub = ShellOutput()
        await _run_one(phone, cleaned, sub)
        if redirect:
            data = b"".join(c for fd, c in sub.chunks if fd == STDOUT)
            phone.fs.write(redirect, data)
            sub.chunks = [(fd, c) for fd, c in sub.chunks if fd != STDOUT]
        result.chunks.extend(sub.chunks)
        last = sub.code
        if sub.daemon:
            result.daemon = sub.daemon
            break
    result.code = last
    return result


async def _run_one(phone: PhoneBackend, argv: list[str], out: ShellOutput) -> None:
    name = argv[0].rsplit("/", 1)[-1]
    if name == "toybox" and len(argv) > 1:
        argv, name = argv[1:], argv[1]
    handler = _COMMANDS.get(name)
    if handler is None:
        out.out(f"/system/bin/sh: {name}: inaccessible or not found\n", STDERR)
        out.code = 127
        return
    try:
        ret = handler(phone, argv[1:], out)
        if ret is not None:
            await ret
    except (IndexError, ValueError) as exc:
        logger.debug("shell %s: %s", argv, exc)
        out.out(f"{name}: bad arguments: {' '.join(argv[1:])}\n", STDERR)
        out.code = 1


def _echo(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    newline = "\n"
    if args[:1] == ["-n"]:
        args, newline = args[1:], ""
    out.out(" ".join(args) + newline)


def _settings(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    if args[:2] == ["--user", args[1] if len(args) > 1 else ""]:
        args = args[2:]
    verb, ns = args[0], args[1]
    if ns not in {"global", "system", "secure"}:
        out.out(f"Invalid namespace '{ns}'\n", STDERR)
        out.code = 1
        return
    if verb == "get":
        value = phone.get_setting(ns, args[2])
        out.out(f"{'null' if value is None else value}\n")
    elif verb == "put":
        phone.put_setting(ns, args[2], args[3])
    elif verb == "delete":
        delete = getattr(phone, "delete_setting", None)
        if delete:
            delete(ns, args[2])
        out.out("Deleted 1 rows\n")
    elif verb == "list":
        lister = getattr(phone, "list_settings", None)
        for key, value in sorted((lister(ns) if lister else {}).items()):
            out.out(f"{key}={value}\n")
    else:
        raise ValueError(verb)


def _parse_intent(args: list[str]) -> tuple[Intent, list[str]]:
    action = data = component = None
    categories: list[str] = []
    extras: dict[str, str] = {}
    flags: list[str] = []
    it = iter(args)
    positional: list[str] = []
    for arg in it:
        if arg == "-a":
            action = next(it)
        elif arg == "-d":
            data = next(it)
        elif arg == "-n":
            component = next(it)
        elif arg == "-c":
            categories.append(next(it))
        elif arg in {"--es", "--ei", "--ez", "--el", "--ef", "--eu"}:
            key = next(it)
            extras[key] = next(it)
        elif arg in {"-f", "--user", "-t", "--activity-brought-to-front"}:
            if arg != "--activity-brought-to-front":
                next(it)
        elif arg.startswith("-"):
            flags.append(arg)
        else:
            positional.append(arg)
    if component is None and positional and "/" in positional[0]:
        component = positional.pop(0)
    intent = Intent(
        action=action, data=data, component=component, categories=tuple(categories), extras=extras
    )
    return intent, flags


def _intent_repr(intent: Intent) -> str:
    parts = []
    if intent.action:
        parts.append(f"act={intent.action}")
    if intent.categories:
        parts.append("cat=[" + ",".join(intent.categories) + "]")
    if intent.data:
        parts.append(f"dat={intent.data}")
    if intent.component:
        parts.append(f"cmp={intent.component}")
    return "Intent { " + " ".join(parts) + " }"


def _am(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    verb = args[0]
    if verb in {"start", "start-activity"}:
        intent, flags = _parse_intent(args[1:])
        if "-S" in flags and intent.component:
            phone.force_stop(intent.component.split("/")[0])
        out.out(f"Starting: {_intent_repr(intent)}\n")
        error = phone.start_activity(intent)
        if error:
            out.out(f"{error}\n", STDERR)  # real am exits 0 even here
        elif "-W" in flags:
            pkg, act = phone.foreground()
            out.out(
                f"Status: ok\nLaunchState: COLD\nActivity: {pkg}/{act}\n"
                "TotalTime: 120\nWaitTime: 125\nComplete\n"
            )
    elif verb == "force-stop":
        phone.force_stop(args[-1])
    elif verb == "broadcast":
        intent, _ = _parse_intent(args[1:])
        out.out(f"Broadcasting: {_intent_repr(intent)}\nBroadcast completed: result=0\n")
    elif verb == "kill":
        pass
    else:
        out.out(f"Error: unknown command '{verb}'\n", STDERR)
        out.code = 255


def _monkey(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    package = args[args.index("-p") + 1]
    if phone.start_activity(Intent(package=package, action="android.intent.action.MAIN")):
        out.out("** No activities found to run, monkey aborted.\n", STDERR)
        out.code = 251
        return
    out.out("  bash arg: -p\n  bash arg: " + package + "\nEvents injected: 1\n")


def _input(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    if args and args[0] in {"touchscreen", "keyboard", "mouse", "trackball"}:
        args = args[1:]
    verb = args[0]
    if verb == "tap":
        phone.tap(float(args[1]), float(args[2]))
    elif verb == "text":
        phone.type_text(" ".join(args[1:]).replace("%s", " "))
    elif verb == "keyevent":
        for key in (a for a in args[1:] if not a.startswith("--")):
            phone.key(normalize_key(key))
    elif verb in {"swipe", "draganddrop"}:
        phone.swipe(float(args[1]), float(args[2]), float(args[3]), float(args[4]))
    else:
        raise ValueError(verb)


def _uiautomator(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    if not args or args[0] != "dump":
        out.out("Usage: uiautomator <subcommand> [options]\n", STDERR)
        out.code = 1
        return
    rest = [a for a in args[1:] if not a.startswith("--")]
    path = rest[0] if rest else "/sdcard/window_dump.xml"
    xml = dump_xml(phone.ui_tree())
    if path == "/dev/tty":
        out.out(xml)
        return
    phone.fs.write(path, xml.encode())
    out.out(f"UI hierchary dumped to: {path}\n")


def _dumpsys(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    service = args[0] if args else ""
    pkg, act = phone.foreground()
    if service == "window":
        out.out(
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
            f"  mCurrentFocus=Window{{4f3a2b1 u0 {pkg}/{pkg + act if act.startswith('.') else act}}}\n"
            f"  mFocusedApp=ActivityRecord{{9c1d2e3 u0 {pkg}/{act} t12}}\n"
        )
    elif service == "activity":
        out.out(f"  mResumedActivity: ActivityRecord{{9c1d2e3 u0 {pkg}/{act} t12}}\n")
    elif service == "display":
        w, h = phone.screen_size
        out.out(
            f"  mDefaultViewport=DisplayViewport{{valid=true, displayId=0, orientation=0, "
            f"logicalFrame=Rect(0, 0 - {w}, {h}), deviceWidth={w}, deviceHeight={h}}}\n"
        )
    elif service == "SurfaceFlinger" and "--display-id" in args:
        out.out('Display 0 (HWC display 0): port=0 pnpId=GGL displayName="EMU_display_0"\n')
    elif service == "battery":
        out.out("Current Battery Service state:\n  AC powered: true\n  level: 87\n  scale: 100\n")


def _pm(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    verb = args[0]
    if verb == "list" and args[1] == "packages":
        rest = [a for a in args[2:] if not a.startswith("-")]
        for name in sorted(phone.packages()):
            if not rest or rest[0] in name:
                out.out(f"package:{name}\n")
    elif verb == "path":
        if args[1] in phone.packages():
            out.out(f"package:/data/app/{args[1]}/base.apk\n")
        else:
            out.code = 1
    elif verb in {"clear", "grant", "revoke"}:
        out.out("Success\n" if verb == "clear" else "")
    else:
        out.out(f"Unknown command: {verb}\n", STDERR)
        out.code = 1


def _getprop(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    props = phone.props()
    if args:
        out.out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")
    else:
        for key, value in sorted(props.items()):
            out.out(f"[{key}]: [{value}]\n")


def _wm(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    if args[0] == "size":
        w, h = phone.screen_size
        out.out(f"Physical size: {w}x{h}\n")
    elif args[0] == "density":
        out.out("Physical density: 420\n")


def _screencap(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    rest = [a for a in args if not a.startswith("-")]
    png = render_png(phone.ui_tree(), phone.screen_size)
    if rest:
        phone.fs.write(rest[0], png)
    else:
        out.out(png)


def _ls(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    long = any(a.startswith("-") and "l" in a for a in args)
    paths = [a for a in args if not a.startswith("-")] or ["/"]
    for path in paths:
        st = phone.fs.stat(path)
        if st is None:
            out.out(f"ls: {path}: No such file or directory\n", STDERR)
            out.code = 1
            continue
        entries = phone.fs.listdir(path) if st[0] & 0o040000 else [(path, *st)]
        for name, mode, size, _mtime in entries:
            if long:
                kind = "d" if mode & 0o040000 else "-"
                out.out(f"{kind}rw-r--r-- 1 shell shell {size} 2024-01-01 00:00 {name}\n")
            else:
                out.out(f"{name}\n")


def _cat(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    for path in args:
        try:
            out.out(phone.fs.read(path))
        except (FileNotFoundError, IsADirectoryError) as exc:
            reason = "Is a directory" if isinstance(exc, IsADirectoryError) else "No such file or directory"
            out.out(f"cat: {path}: {reason}\n", STDERR)
            out.code = 1


def _rm(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    flags = "".join(a[1:] for a in args if a.startswith("-"))
    for path in (a for a in args if not a.startswith("-")):
        try:
            phone.fs.remove(path, recursive="r" in flags)
        except (FileNotFoundError, IsADirectoryError) as exc:
            if "f" in flags and isinstance(exc, FileNotFoundError):
                continue
            reason = "Is a directory" if isinstance(exc, IsADirectoryError) else "No such file or directory"
            out.out(f"rm: {path}: {reason}\n", STDERR)
            out.code = 1


def _md5sum(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    for path in args:
        try:
            out.out(f"{hashlib.md5(phone.fs.read(path)).hexdigest()}  {path}\n")
        except (FileNotFoundError, IsADirectoryError):
            out.out(f"md5sum: {path}: No such file or directory\n", STDERR)
            out.code = 1


def _svc(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    keys = {"wifi": ("global", "wifi_on"), "bluetooth": ("global", "bluetooth_on")}
    if args[0] in keys and args[1] in {"enable", "disable"}:
        phone.put_setting(*keys[args[0]], "1" if args[1] == "enable" else "0")


def _ps(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    out.out("USER           PID  PPID     VSZ    RSS WCHAN            ADDR S NAME\n")
    out.out("root             1     0   10904   2416 0                   0 S init\n")
    pkg, _ = phone.foreground()
    out.out(f"u0_a120       4242   321 1234567  98765 0                   0 S {pkg}\n")


def _app_process(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    if "com.wetest.uia2.Main" in args or any("uiautomator" in a for a in args):
        out.daemon = "uiautomator2"
        return
    out.out("Error: no main class\n", STDERR)
    out.code = 1


async def _sleep(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    await asyncio.sleep(min(float(args[0]), 30.0))


def _true(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    return None


def _false(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    out.code = 1


def _exit(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    out.code = int(args[0]) if args else 0


def _mkdir(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    for path in (a for a in args if not a.startswith("-")):
        phone.fs.write(path.rstrip("/") + "/.keep", b"")
        phone.fs.remove(path.rstrip("/") + "/.keep")


def _touch(phone: PhoneBackend, args: list[str], out: ShellOutput) -> None:
    for path in args:
        if phone.fs.stat(path) is None:
            phone.fs.write(path, b"")


_COMMANDS: dict[str, Handler] = {
    "echo": _echo,
    "settings": _settings,
    "am": _am,
    "monkey": _monkey,
    "input": _input,
    "uiautomator": _uiautomator,
    "dumpsys": _dumpsys,
    "pm": _pm,
    "cmd": lambda p, a, o: _pm(p, a[1:], o) if a and a[0] == "package" else None,
    "getprop": _getprop,
    "wm": _wm,
    "screencap": _screencap,
    "ls": _ls,
    "cat": _cat,
    "rm": _rm,
    "md5sum": _md5sum,
    "md5": _md5sum,
    "svc": _svc,
    "ps": _ps,
    "app_process": _app_process,
    "sleep": _sleep,
    "true": _true,
    "false": _false,
    "exit": _exit,
    "mkdir": _mkdir,
    "touch": _touch,
    "ime": _true,
    "chmod": _true,
    "sync": _true,
    "log": _true,
}
