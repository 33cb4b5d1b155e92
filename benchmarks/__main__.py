"""`python -m benchmarks [--quick] [--json PATH] [--only N ...]`: measure, print, save.

Each measurement is a ratio or a count taken in the same run, so that a noisy shared machine
cancels out; nothing here asserts a wall-clock limit. The exit code is 1 only when a
measurement could not run (an exception), never because a target was missed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from . import (
    ack_latency,
    attestations,
    burst,
    chart_renders,
    config_check,
    gate_builds,
    release_to_pr,
    requests_per_promotion,
    scale,
    write_budget,
)
from .report import Section, machine, render, write_json

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"

MEASUREMENTS: dict[str, tuple[str, Callable[[bool], Awaitable[Section]]]] = {
    "1": ("webhook acknowledgement latency", ack_latency.run),
    "2": ("GitHub requests per promotion", requests_per_promotion.run),
    "3": ("release-to-PR time at +50 ms per request", release_to_pr.run),
    "4": ("burst of mixed deliveries", burst.run),
    "5": ("scale: policy, services, manifest", scale.run),
    "6": ("config check: a PR touching 50 files", config_check.run),
    "7": ("GitHub's content-creation budget: a release train", write_budget.run),
    "8": ("the gate with Kustomize builds on a large repository", gate_builds.run),
    "9": ("attestation verification: CPU per bundle", attestations.run),
    "10": ("the gate with a Helm chart and the Applications that sync it", chart_renders.run),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="small counts, same code paths (CI: well under a minute)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON,
                        help=f"where to write the results (default {DEFAULT_JSON})")
    parser.add_argument("--only", nargs="+", choices=sorted(MEASUREMENTS), metavar="N",
                        help="run only these measurements (1-10)")
    return parser


async def run_all(names: Sequence[str], quick: bool) -> tuple[list[Section], bool]:
    sections: list[Section] = []
    failed = False
    for name in names:
        title, measure = MEASUREMENTS[name]
        print(f"[{name}] {title}...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            section = await measure(quick)
        except Exception as exc:
            traceback.print_exc()
            section = Section(f"{name}. {title}")
            section.add("could not run", f"{type(exc).__name__}: {exc}", ok=False)
            failed = True
        section.data["elapsed_seconds"] = round(time.perf_counter() - started, 1)
        print(f"[{name}] done in {section.data['elapsed_seconds']} s", file=sys.stderr,
              flush=True)
        sections.append(section)
    return sections, failed


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The in-process bots log like production; only their errors belong in this output.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    command = "python -m benchmarks" + (" --quick" if args.quick else "")
    if args.only:
        command += " --only " + " ".join(args.only)
    facts = machine()
    started = time.perf_counter()
    sections, failed = asyncio.run(run_all(args.only or sorted(MEASUREMENTS), args.quick))
    elapsed = time.perf_counter() - started
    print(render(sections, facts, command))
    print(f"\n{elapsed:.0f} s in all; JSON written to {args.json}")
    write_json(args.json, sections, facts, command, args.quick, elapsed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
