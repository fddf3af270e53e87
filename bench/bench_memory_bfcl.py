"""Retrieval quality on public data: the BFCL v4 memory category (bfcl-eval wheel).

Usage::

    python bench/bench_memory_bfcl.py [--cache DIR]

The wheel is fetched at run time with ``pip download --no-deps bfcl-eval`` into a cache dir
(default: ``$POCKETPILOT_HOME/bench/bfcl``) and read with ``zipfile``; it is never installed
(it pins heavy dependencies). Needs the built embedder.

Method: every user turn of each scenario's prerequisite conversations is split into
sentences, and each sentence is written as one memory of an owner named after the scenario
(scenarios never see each other's memories). Each question is a query against its scenario;
the answer's ``source`` quote is matched to the sentence(s) it came from (normalised word
sequences: a sentence holding a source fragment of >= 3 words, or held in one). Recall@k =
share of questions with a source sentence in the top k. Hybrid, BM25-only and vector-only run
on the same stores in the same run (``SqliteMemory.search(mode=...)``), with the fp32 model
for the stored vectors and both fp32 and int8 for queries. Questions are split in two halves
by id parity ("dev" even, "test" odd) so any tuning can be done on dev and reported on test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory  # noqa: E402
from pocketpilot.memory.build_embedder import pocketpilot_home  # noqa: E402
from pocketpilot.memory.embedders import OnnxMiniLMEmbedder  # noqa: E402
from pocketpilot.memory.fusion import FusionWeights  # noqa: E402
from pocketpilot.suites.wheel import fetch_wheel  # noqa: E402

SVC, ADM = "bench-service-token-000", "bench-admin-credential-00"
KS = (1, 5, 10)
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


def norm(text: str) -> str:
    """Lower-cased words between single spaces, so a substring test matches whole words only."""
    return " " + " ".join(w.lower() for w in _WORD.findall(text)) + " "


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` that hold at least two words: a lone word is no memory."""
    return [s.strip() for s in _SENT.split(text) if len(_WORD.findall(s)) >= 2]


def load(wheel: Path) -> tuple[dict[str, list[str]], list[dict]]:
    """Scenario -> memory sentences, and questions with their scenario and source."""
    with zipfile.ZipFile(wheel) as z:
        questions = [json.loads(x) for x in z.read("bfcl_eval/data/BFCL_v4_memory.json").decode().splitlines()]
        answers = {a["id"]: a for a in (json.loads(x) for x in
                   z.read("bfcl_eval/data/possible_answer/BFCL_v4_memory.json").decode().splitlines())}
        memories: dict[str, list[str]] = {}
        for name in z.namelist():
            if name.startswith("bfcl_eval/data/memory_prereq_conversation/") and name.endswith(".json"):
                for line in z.read(name).decode().splitlines():
                    conv = json.loads(line)
                    for turn in conv["question"]:
                        for msg in turn:
                            if msg["role"] == "user":
                                memories.setdefault(conv["scenario"], []).extend(sentences(msg["content"]))
    for scenario, sents in memories.items():
        memories[scenario] = list(dict.fromkeys(sents))
    out = []
    for q in questions:
        text = " ".join(m["content"] for turn in q["question"] for m in turn if m["role"] == "user")
        out.append({"id": q["id"], "scenario": q["scenario"], "query": text, "source": answers[q["id"]]["source"]})
    return memories, out


def relevant(source: str, sents: list[str]) -> set[str]:
    """The sentences of ``sents`` that an answer's source quote came from.

    A sentence is relevant when it holds a fragment of the quote of three words or more, or is held
    in one: a quote may join sentences, or cut them with an ellipsis.
    """
    frags = [norm(f) for part in re.split(r"\.\.\.|…", source) for f in sentences(part.strip(" \"'“”")) or [part]]
    frags = [f for f in frags if len(f.split()) >= 3]
    hits = set()
    for s in sents:
        ns = norm(s)
        if any(f in ns or (len(ns.split()) >= 3 and ns in f) for f in frags):
            hits.add(s)
    return hits


def main() -> None:
    """Write each scenario's sentences to one store and print recall@k of each search mode.

    With ``--tune``, fusion weights are first chosen on the dev half, and reported with the rest.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=Path, default=None, help="where the wheel is downloaded")
    ap.add_argument("--tune", action="store_true", help="grid-search fusion weights on the dev half")
    args = ap.parse_args()
    wheel = fetch_wheel(args.cache or pocketpilot_home() / "bench" / "bfcl")
    memories, questions = load(wheel)
    print(f"wheel {wheel.name}; {sum(map(len, memories.values()))} memory sentences in {len(memories)} scenarios; "
          f"{len(questions)} questions")
    for q in questions:
        q["relevant"] = relevant(q["source"], memories[q["scenario"]])
    usable = [q for q in questions if q["relevant"]]
    print(f"{len(usable)} questions whose source sentence was located ({len(questions) - len(usable)} skipped)")

    fp32, int8 = OnnxMiniLMEmbedder(variant="fp32"), OnnxMiniLMEmbedder(variant="int8")
    policy = AccessPolicy(SVC, ADM)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bfcl.db"
        with SqliteMemory(path, policy, embedder=fp32) as store:
            for scenario, sents in memories.items():
                caller = Caller.service(SVC, acting_for=scenario)
                store.write_many(caller, [MemoryCandidate(content=s, tier="episodic",
                                                          provenance=Provenance(source="user_statement"))
                                          for s in sents])
        runs = [
            ("hybrid (fp32 query)", fp32, "hybrid", None),
            ("hybrid (int8 query)", int8, "hybrid", None),
            ("bm25 only", fp32, "keyword", None),
            ("vector only (fp32 query)", fp32, "vector", None),
            ("vector only (int8 query)", int8, "vector", None),
        ]
        if args.tune:
            dev = [q for q in usable if int(q["id"].split("_")[1].split("-")[0]) % 2 == 0]
            best, best_score = None, -1.0
            grid = [FusionWeights(method="rrf", mmr_lambda=lam, vector_weight=wv)
                    for lam in (0.9, 1.0) for wv in (0.5, 0.75, 1.0)]
            grid += [FusionWeights(method="convex", mmr_lambda=lam, vector_share=a)
                     for lam in (0.9, 1.0) for a in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)]
            for w in grid:
                with SqliteMemory(path, policy, embedder=fp32, query_embedder=int8, weights=w) as store:
                    res = evaluate(store, dev, "hybrid")
                    # Mean reciprocal rank breaks the ties that three recall cut-offs on ~78
                    # questions leave (one question moves a recall by 0.013).
                    score = sum(res["all"]) + res["mrr"][0]
                knob = f"vector_weight={w.vector_weight}" if w.method == "rrf" else f"vector_share={w.vector_share}"
                print(f"  dev: {w.method:<6} mmr_lambda={w.mmr_lambda} {knob}: R@1+R@5+R@10+MRR = {score:.3f}")
                if score > best_score:
                    best, best_score = w, score
            print(f"chosen on dev: {best}")
            runs.append(("hybrid tuned (int8 query)", int8, "hybrid", best))
        results: dict[str, dict[str, list[float]]] = {}
        for label, qemb, mode, weights in runs:
            with SqliteMemory(path, policy, embedder=fp32, query_embedder=qemb, weights=weights) as store:
                results[label] = evaluate(store, usable, mode)
    print(f"\n{'':28}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + "   |" +
          "".join(f"{'dev R@' + str(k):>10}" for k in KS) + "   |" + "".join(f"{'test R@' + str(k):>11}" for k in KS))
    for label, res in results.items():
        print(f"{label:<28}" + "".join(f"{v:8.3f}" for v in res["all"]) + "   |" +
              "".join(f"{v:10.3f}" for v in res["dev"]) + "   |" + "".join(f"{v:11.3f}" for v in res["test"]))


def evaluate(store: SqliteMemory, questions: list[dict], mode: str) -> dict[str, list[float]]:
    """Search each question in its scenario and score where its source sentence ranks.

    Returns:
        Recall at each of ``KS`` over all questions and over the dev and test halves, and the mean
        reciprocal rank within the top 10.
    """
    ranks: list[tuple[int, int | None]] = []
    for q in questions:
        caller = Caller.service(SVC, acting_for=q["scenario"])
        hits = store.search(caller, q["query"], k=max(KS), mode=mode)  # MRR counts within the top 10  # type: ignore[arg-type]
        rank = next((i for i, h in enumerate(hits, 1) if h.item.content in q["relevant"]), None)
        ranks.append((int(q["id"].split("_")[1].split("-")[0]), rank))

    def recall(sel: list[int | None]) -> list[float]:
        return [sum(1 for r in sel if r is not None and r <= k) / max(1, len(sel)) for k in KS]

    mrr = sum(1.0 / r for _, r in ranks if r is not None) / max(1, len(ranks))
    return {"mrr": [mrr], "all": recall([r for _, r in ranks]), "dev": recall([r for i, r in ranks if i % 2 == 0]),
            "test": recall([r for i, r in ranks if i % 2 == 1])}


if __name__ == "__main__":
    main()
