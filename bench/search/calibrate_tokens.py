"""Calibrate the dependency-free schema token estimate against a real tokenizer.

    pip install bpe-openai            # tiktoken-compatible, its vocabularies inside the wheel (no download)
    .venv/bin/python bench/search/calibrate_tokens.py          # error of the shipped estimate
    .venv/bin/python bench/search/calibrate_tokens.py --fit    # refit the coefficients (train: even servers)

Ground truth: o200k_base (GPT-4o and later) token counts of each tool as its compact Anthropic-shape
JSON (`{"name", "description", "input_schema"}`), for the 190 real tools of servers/ plus the same
tools with their descriptions replaced by Chinese sentences (Chinese servers exist; our corpus has
none). cl100k_base is reported beside it. The fit is non-negative least squares on character-class counts,
trained on the servers at even positions and tested on the others.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from corpus import load_catalog, load_queries

from mcpstation.catalog import CatalogTool
from mcpstation.catalog.schemas import anthropic_tools
from mcpstation.catalog.tokens import _features, estimate_text_tokens, estimate_tool_tokens

TRUTH_FILE = Path(__file__).resolve().parent / "results" / "o200k_counts.json"


def corpus() -> list[tuple[str, CatalogTool]]:
    tools, _ = load_catalog()
    chinese = [q.query for q in load_queries() if q.kind == "chinese"]
    out = [("en", t) for t in tools]
    for i, tool in enumerate(tools[::3]):
        sentence = "，".join(chinese[(i + k) % len(chinese)] for k in range(1 + i % 3)) + "。"
        out.append(("zh", dataclasses.replace(tool, description=sentence)))
    return out


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (drop the most negative until none is)."""
    active = list(range(a.shape[1]))
    while True:
        coef, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if (coef >= 0).all():
            out = np.zeros(a.shape[1])
            out[active] = coef
            return out
        active.pop(int(np.argmin(coef)))


def serialise(tool: CatalogTool) -> str:
    return json.dumps(anthropic_tools([tool])[0], ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--write-truth", action="store_true", help=f"store texts and counts in {TRUTH_FILE.name}")
    ns = parser.parse_args()
    try:
        import bpe_openai
    except ImportError:
        sys.exit("calibration needs a real tokenizer: pip install bpe-openai")
    o200k = bpe_openai.get_encoding("o200k_base")
    cl100k = bpe_openai.get_encoding("cl100k_base")
    rows = corpus()
    texts = [serialise(t) for _, t in rows]
    truth = np.array([len(o200k.encode(s)) for s in texts], dtype=float)
    truth_cl = np.array([len(cl100k.encode(s)) for s in texts], dtype=float)
    servers = sorted({t.server for _, t in rows})
    train = np.array([servers.index(t.server) % 2 == 0 for _, t in rows])
    if ns.fit:
        x = np.array([_features(s) for s in texts], dtype=float)
        coef = nnls(x[train], truth[train])
        print("coefficients:", ", ".join(f"{c:.4f}" for c in coef))
        estimate = x @ coef
    else:
        estimate = np.array([estimate_tool_tokens(t) for _, t in rows], dtype=float)
        assert all(estimate_text_tokens(s) > 0 for s in texts)
    chars4 = np.array([len(s) / 4 for s in texts])
    print(
        "| set | tools | o200k total | estimate total | total error | per-tool median abs | per-tool p90 abs "
        "| chars/4 total error |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    langs = np.array([lang for lang, _ in rows])
    for label, mask in (
        ("train, English", train & (langs == "en")),
        ("test, English", ~train & (langs == "en")),
        ("train, Chinese", train & (langs == "zh")),
        ("test, Chinese", ~train & (langs == "zh")),
        ("all", np.ones(len(rows), dtype=bool)),
    ):
        t, e = truth[mask], estimate[mask]
        rel = np.abs(e - t) / t
        print(
            f"| {label} | {mask.sum()} | {t.sum():.0f} | {e.sum():.0f} | {e.sum() / t.sum() - 1:+.1%} | "
            f"{np.median(rel):.1%} | {np.percentile(rel, 90):.1%} | {chars4[mask].sum() / t.sum() - 1:+.1%} |"
        )
    print(f"\ncl100k_base total / o200k_base total: {truth_cl.sum() / truth.sum():.3f}")
    if ns.write_truth:
        records = [
            {"lang": lang, "server": tool.server, "name": tool.name, "text": text, "o200k": int(count)}
            for (lang, tool), text, count in zip(rows, texts, truth, strict=True)
        ]
        TRUTH_FILE.write_text(json.dumps(records, ensure_ascii=False, indent=0) + "\n")
        print(f"wrote {len(records)} texts and their o200k_base counts to {TRUTH_FILE}")


if __name__ == "__main__":
    main()
