"""Peak memory (ru_maxrss) that one huge MCP answer costs IRIS, in a fresh process.

``python -m tests.support.mcp_rss MEGABYTES`` starts the flaky test server over stdio,
warms up with a small call, then asks its ``huge`` tool for MEGABYTES MB of text and
prints ``{"growth_mb": …, "result_chars": …, …}`` as its last line. The peak RSS
(VmHWM, reset after the warm-up) counts every copy IRIS and the MCP SDK make while
reading the answer.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys

from tests.support.mcp_servers import execute, flaky, running


def _peak_mb() -> float:
    """The process's peak resident set size since start, or since ``_reset_peak``, in MB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _reset_peak() -> bool:
    """Start the peak from the current RSS (Linux ≥ 4.0), so only what follows is measured.

    False if the kernel refused: the peak then includes start-up, which would hide growth.
    """
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


async def measure(megabytes: float) -> dict[str, float | bool]:
    """Peak RSS growth in MB for one answer of ``megabytes`` MB, and the length the model got."""
    async with running(flaky(timeout_s=60.0)) as (_, registry):
        await execute(registry, "test/flaky/huge", {"megabytes": 0.01})  # warm every code path
        reset = _reset_peak()
        before = _peak_mb()
        res = await execute(registry, "test/flaky/huge", {"megabytes": megabytes})
        after = _peak_mb()
    return {
        "growth_mb": round(after - before, 1),
        "result_chars": len(res.result),
        "peak_mb": round(after, 1),
        "peak_reset": reset,
    }


def main() -> None:
    """Print the measurement as JSON."""
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    print(json.dumps(asyncio.run(measure(megabytes))))


if __name__ == "__main__":
    main()
