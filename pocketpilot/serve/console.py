"""The live console: one HTML page served by ``pocketpilot serve`` at ``/``.

No build step and no network assets: the page is this one document (inline style and script),
and it talks only to the service that served it. It asks for the token (the page itself holds
no secret), opens a session on a device, sends requests, shows each step as its event arrives
(calls, results, notices, memory hits with their provenance), answers confirmations and
questions in a dialog, and opens the HTML replay of any finished run. Every piece of data is
put on the page as text, never as markup.

The stream is read with ``fetch`` rather than ``EventSource``, which cannot send the
``Authorization`` and ``X-Session-Key`` headers; it reconnects with ``Last-Event-ID``.
"""

from __future__ import annotations

__all__ = ["console_html"]

_PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pocketpilot console</title>
<style>
  :root { font-family: system-ui, sans-serif; color: #1d232a; background: #f5f6f8; }
  body { margin: 0 auto; max-width: 60rem; padding: 1rem; }
  h1 { font-size: 1.3rem; margin: 0 0 .8rem; }
  fieldset { border: 1px solid #cfd4da; border-radius: .4rem; margin: 0 0 .8rem; padding: .6rem .8rem; background: #fff; }
  legend { font-weight: 600; padding: 0 .3rem; }
  label { margin-right: .8rem; }
  input[type=text], input[type=password] { padding: .3rem; border: 1px solid #b8bfc7; border-radius: .3rem; }
  #request { width: 32rem; max-width: 100%; }
  button { padding: .3rem .8rem; border-radius: .3rem; border: 1px solid #8a939c; background: #fff; cursor: pointer; }
  button.primary { background: #1f6feb; color: #fff; border-color: #1f6feb; }
  #state { display: inline-block; padding: .1rem .5rem; border-radius: 1rem; background: #e3e7eb; font-size: .85rem; }
  #log { list-style: none; padding: 0; margin: 0; }
  #log li { overflow-wrap: anywhere; background: #fff; border: 1px solid #dde1e5; border-radius: .4rem; padding: .45rem .6rem; margin-bottom: .4rem; }
  #log li.run { border-left: 4px solid #1f6feb; }
  #log li.step.failed { border-left: 4px solid #d1242f; }
  #log li.end { border-left: 4px solid #2da44e; }
  #log li.end.denied, #log li.end.cancelled, #log li.error { border-left: 4px solid #d1242f; }
  .muted { color: #5b636b; font-size: .85rem; }
  .memory { margin: .2rem 0 0 1rem; font-size: .85rem; }
  code { background: #f0f2f4; padding: 0 .2rem; border-radius: .2rem; }
  dialog { border: 1px solid #8a939c; border-radius: .5rem; max-width: 30rem; }
  #error { color: #d1242f; min-height: 1.2rem; }
</style>
</head>
<body>
<h1>pocketpilot console <span id="state">no session</span></h1>
<fieldset id="connect">
  <legend>Session</legend>
  <label>Token <input type="password" id="token" size="28" autocomplete="off"></label>
  <label>Owner <input type="text" id="owner" value="me" size="8"></label><br>
  <label><input type="radio" name="device" value="sandbox" checked> sandbox</label>
  <label>apps <input type="text" id="apps" placeholder="everyday apps" size="22"></label>
  <label><input type="radio" name="device" value="simphone"> simulated phone</label>
  <label><input type="radio" name="device" value="adb"> adb serial <input type="text" id="serial" size="14"></label>
  <label><input type="radio" name="device" value="mcp"> MCP server <input type="text" id="mcp" size="8"></label>
  <button id="open" class="primary">Open session</button>
</fieldset>
<fieldset id="ask" disabled>
  <legend>Request</legend>
  <input type="text" id="request" placeholder="turn wifi off and tell me the battery level">
  <button id="send" class="primary">Send</button>
  <button id="cancel">Cancel</button>
</fieldset>
<div id="error" role="alert"></div>
<ul id="log"></ul>
<dialog id="dialog">
  <p id="question"></p>
  <p id="question-detail" class="muted"></p>
  <div id="confirm-buttons">
    <button id="allow" class="primary">Allow</button>
    <button id="deny">Deny</button>
  </div>
  <div id="answer-box">
    <input type="text" id="answer" size="30"> <button id="answer-send" class="primary">Answer</button>
  </div>
</dialog>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const S = { token: "", sid: null, key: null, lastId: 0, question: null, streaming: false };

function line(cls, text, extra) {
  const li = document.createElement("li");
  li.className = cls;
  li.textContent = text;
  if (extra) li.appendChild(extra);
  $("log").appendChild(li);
  li.scrollIntoView({ block: "nearest" });
  return li;
}
function showError(message) { $("error").textContent = message || ""; }

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + S.token };
  if (S.key) headers["X-Session-Key"] = S.key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((data.error && (data.error.code + ": " + data.error.message)) || ("HTTP " + r.status));
  return data;
}

function callText(call) {
  const args = Object.entries(call.arguments || {}).map(([k, v]) => k + "=" + JSON.stringify(v)).join(", ");
  return call.name + "(" + args + ")";
}

function renderStep(step) {
  const action = step.action || {};
  let text = "step " + (step.index + 1) + ": ";
  let failed = false;
  if (action.kind === "tool_call") {
    text += action.calls.map((call, i) => {
      const r = (step.results || [])[i];
      if (!r) return callText(call);
      if (!r.ok) failed = true;
      return callText(call) + " → " + (r.ok ? JSON.stringify(r.data) : "failed: " + (r.error ? r.error.code : "error"));
    }).join("; ");
  } else if (action.kind) {
    const said = action.summary || action.question || action.reason || action.query || action.content || action.name || "";
    text += action.kind + (said ? ": " + said : "");
  } else {
    text += "output that did not parse" + (step.error ? " (" + step.error.message + ")" : "");
    failed = true;
  }
  const extra = document.createElement("div");
  for (const notice of step.notices || []) {
    const n = document.createElement("div");
    n.className = "muted notice";
    n.textContent = "notice: " + (typeof notice === "string" ? notice : notice.text);  // {policy, code, text} in a trace
    extra.appendChild(n);
  }
  for (const hit of step.retrieved || []) {
    const m = document.createElement("div");
    const p = hit.provenance || {};
    m.className = "memory";
    m.textContent = "memory: " + hit.content + " — " + [p.source, p.observed_at || p.created_at, p.trust !== undefined ? "trust " + p.trust : ""].filter(Boolean).join(", ");
    extra.appendChild(m);
  }
  line("step" + (failed ? " failed" : ""), text, extra);
}

async function openReplay(episode) {
  try {
    const r = await fetch("/v1/sessions/" + S.sid + "/traces/" + episode + "?format=html",
                          { headers: { "Authorization": "Bearer " + S.token, "X-Session-Key": S.key } });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const url = URL.createObjectURL(new Blob([await r.text()], { type: "text/html" }));
    window.open(url, "_blank");
  } catch (e) { showError("replay: " + e.message); }
}

let currentEpisode = null;
function handle(ev) {
  const data = ev.data;
  switch (ev.event) {
    case "state": $("state").textContent = data.state; $("state").dataset.state = data.state; break;
    case "request": line("request", "you: " + data.request); break;
    case "header": currentEpisode = data.header.episode_id; line("run", "run " + (data.header.turn + 1) + " · " + data.header.planner.model); break;
    case "step": renderStep(data.step); break;
    case "end": {
      const li = line("end " + data.stop_reason, "stopped: " + data.stop_reason + (data.stop_detail ? " — " + data.stop_detail : ""));
      li.dataset.stop = data.stop_reason;
      const episode = currentEpisode;
      const b = document.createElement("button");
      b.textContent = "Replay";
      b.className = "replay";
      b.style.marginLeft = ".6rem";
      b.addEventListener("click", () => openReplay(episode));
      li.appendChild(b);
      break;
    }
    case "question": ask(data); break;
    case "answer":
      if (S.question && S.question.id === data.question_id) { S.question = null; if ($("dialog").open) $("dialog").close(); }
      line("answer muted", "answer: " + (data.answer || "(none)") + " (" + data.by + ")");
      break;
    case "error": line("error", "error: " + data.code + ": " + data.message); break;
  }
}

function ask(q) {
  S.question = q;
  $("question").textContent = q.kind === "confirm" ? q.text : "The agent asks: " + q.text;
  $("question-detail").textContent = q.kind === "confirm"
    ? callText(q.call) + (q.timeout_s ? " — denied without an answer in " + q.timeout_s + "s" : "") : "";
  $("confirm-buttons").hidden = q.kind !== "confirm";
  $("answer-box").hidden = q.kind === "confirm";
  $("answer").value = "";
  if (!$("dialog").open) $("dialog").showModal();
}

async function answer(text) {
  const q = S.question;
  if (!q) return;
  try { await api("POST", "/v1/sessions/" + S.sid + "/answers", { question_id: q.id, answer: text }); }
  catch (e) { showError(e.message); }
  if ($("dialog").open) $("dialog").close();
}

async function stream() {
  if (S.streaming) return;
  S.streaming = true;
  while (S.sid) {
    try {
      const r = await fetch("/v1/sessions/" + S.sid + "/events", { headers: {
        "Authorization": "Bearer " + S.token, "X-Session-Key": S.key, "Last-Event-ID": String(S.lastId) } });
      if (!r.ok) throw new Error("events: HTTP " + r.status);
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const fields = {};
          for (const l of frame.split("\n")) {
            if (!l || l.startsWith(":")) continue;
            const at = l.indexOf(":");
            fields[l.slice(0, at)] = l.slice(at + 1).replace(/^ /, "");
          }
          if (fields.data === undefined || fields.id === undefined) continue;
          const id = Number(fields.id);
          if (id <= S.lastId) continue;
          S.lastId = id;
          handle({ id, event: fields.event, data: JSON.parse(fields.data) });
        }
      }
    } catch (e) { showError(e.message); }
    await new Promise((ok) => setTimeout(ok, 1000));
  }
  S.streaming = false;
}

$("open").addEventListener("click", async () => {
  showError("");
  S.token = $("token").value.trim();
  const kind = document.querySelector("input[name=device]:checked").value;
  const device = { kind };
  if (kind === "sandbox") {
    const apps = $("apps").value.split(",").map((a) => a.trim()).filter(Boolean);
    if (apps.length) device.apps = apps;
  } else if (kind === "adb") device.serial = $("serial").value.trim();
  else if (kind === "mcp") device.server = $("mcp").value.trim();
  try {
    S.key = null;
    const made = await api("POST", "/v1/sessions", { owner: $("owner").value.trim() || "me", device });
    S.sid = made.id; S.key = made.key; S.lastId = 0;
    $("log").textContent = "";
    $("ask").disabled = false;
    $("request").focus();
    stream();
  } catch (e) { showError(e.message); }
});
async function send() {
  const text = $("request").value.trim();
  if (!text || !S.sid) return;
  showError("");
  try { await api("POST", "/v1/sessions/" + S.sid + "/requests", { request: text }); $("request").value = ""; }
  catch (e) { showError(e.message); }
}
$("send").addEventListener("click", send);
$("request").addEventListener("keydown", (e) => { if (e.key === "Enter") send(); });
$("cancel").addEventListener("click", async () => {
  try { await api("DELETE", "/v1/sessions/" + S.sid + "/requests/current"); } catch (e) { showError(e.message); }
});
$("allow").addEventListener("click", () => answer("allow"));
$("deny").addEventListener("click", () => answer("deny"));
$("answer-send").addEventListener("click", () => answer($("answer").value.trim()));
$("dialog").addEventListener("cancel", (e) => e.preventDefault());  // Escape does not dismiss a pending question
</script>
</body>
</html>
"""


def console_html() -> str:
    """The console page (the same document for every visitor: it holds no secret)."""
    return _PAGE
