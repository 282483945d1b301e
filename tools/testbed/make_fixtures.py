"""Make the spoken test fixtures (16 kHz WAVs + manifest.json) in
``$IRIS_CACHE/fixtures/<recipe hash>``.

Cached: a second run with the same recipe does nothing. ``--force`` makes them again.
Prints the directory, then one line per fixture: name, seconds, end of speech, text.
"""

from __future__ import annotations

import argparse

from tools.testbed.fixtures import ensure_fixtures, load_manifest


def main() -> None:
    """Command-line entry: ``python -m tools.testbed.make_fixtures [--force] [--quiet]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="make them again even if cached")
    ap.add_argument("--quiet", action="store_true", help="print only the directory")
    args = ap.parse_args()
    target = ensure_fixtures(force=args.force)
    print(target)
    if not args.quiet:
        for name, entry in load_manifest().items():
            rate = entry["sample_rate"]
            print(
                f"  {name:26} {entry['samples'] / rate:5.2f} s  speech "
                f"{entry['speech_start'] / rate:4.2f}-{entry['speech_end'] / rate:4.2f} s  {entry['text']}"
            )


if __name__ == "__main__":
    main()
