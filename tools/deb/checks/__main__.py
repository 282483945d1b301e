"""``python3.11 -m tools.deb.checks``: run every step of the .deb install test in the
container, in order; see the package docstring."""

from __future__ import annotations

import json
import sys

from tools.deb.checks import install, service
from tools.deb.checks.common import LOG, WORK, Runner, log


def main() -> int:
    """Run all steps, write results.json; exit 1 if any step failed."""
    LOG.write_text("")
    params = json.loads((WORK / "params.json").read_text())
    run = Runner(params)
    ctx: dict = {}
    run.step("boot: systemd is running", install.booted, critical=True)
    for name, fn, critical in install.steps(params, ctx):
        run.step(name, fn, critical=critical)
    for name, fn, critical in service.steps(params, ctx):
        run.step(name, fn, critical=critical)
    for name, fn, critical in install.final_steps(params, ctx):
        run.step(name, fn, critical=critical)
    counts = {s: sum(r["status"] == s for r in run.results) for s in ("PASS", "FAIL", "SKIP")}
    log(f"deb-checks: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
