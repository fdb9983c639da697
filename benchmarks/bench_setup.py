"""How long the README's first command takes on a fresh checkout: the set-up of the three environments (with the
package cache this machine has), a second set-up (nothing to do), the daily refresh of the development builds, and
optionally the five-minute campaign after it.

    python3 benchmarks/bench_setup.py [--campaign] [--keep DIR]

Clones the repository's committed HEAD into a scratch folder (or DIR), runs ``bash scripts/setup.sh`` there three
times (the third after back-dating .venv-next's stamp by a day, so it refreshes the development builds), then with
``--campaign`` the README's ``.venv/bin/python -m memo fuzz --minutes 5`` (with ``--bugs-db none``, not to touch the
user's bug database). Prints each step's wall time and the total: the figures in docs/benchmarks.md ("Set-up").
"""
from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(label: str, command: list[str], cwd: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.monotonic() - started
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(("setup:", "memo"))]
    print(f"{label:<42} {seconds:7.1f} s  (exit {done.returncode})", flush=True)
    for line in lines[-4:]:
        print(f"    {line}")
    if done.returncode != 0:
        print((done.stdout + done.stderr)[-3000:], file=sys.stderr)
        raise SystemExit(f"{label} failed")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", action="store_true", help="also run the README's five-minute campaign")
    parser.add_argument("--keep", type=Path, help="clone into this folder and keep it (default: a scratch folder)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="memo-bench-setup-"))
    checkout = root / "memo"
    shutil.rmtree(checkout, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(checkout)], check=True)
    total = timed("set-up from nothing (warm package cache)", ["bash", "scripts/setup.sh"], checkout)
    timed("set-up again (nothing to do)", ["bash", "scripts/setup.sh"], checkout)
    stamp = checkout / ".venv-next" / ".memo-stamp"
    stamp.write_text(stamp.read_text().split()[0] + " 2000-01-01\n")
    timed("set-up the next day (refresh the dev builds)", ["bash", "scripts/setup.sh"], checkout)
    if args.campaign:
        total += timed("memo fuzz --minutes 5", [".venv/bin/python", "-m", "memo", "fuzz", "--minutes", "5",
                                                 "--bugs-db", "none", "--quiet"], checkout)
    print(f"README's first command: {total / 60:.1f} min ({'set-up and campaign' if args.campaign else 'set-up'}); "
          f"{platform.node()}, {platform.machine()}, Python {platform.python_version()}")
    print(f"reproduce: python3 benchmarks/bench_setup.py{' --campaign' if args.campaign else ''}")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
