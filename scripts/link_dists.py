"""Hard-link installed distributions from one virtual environment into another (scripts/setup.sh): .venv-next
pins the same torch as .venv, so its 5 GB (torch, torchvision, triton, the CUDA libraries) are linked, not unpacked
again; pip then finds them installed. Usage: link_dists.py SOURCE_SITE TARGET_SITE NAME-PREFIX...
Only distributions the target lacks are linked; each file of a distribution's RECORD is linked (copied where the two
folders are on different file systems)."""
from __future__ import annotations

import csv
import os
import shutil
import sys
from pathlib import Path


def linked(source: Path, target: Path, prefixes: tuple[str, ...]) -> int:
    have = {info.name.split("-")[0].lower() for info in target.glob("*.dist-info")}
    count = 0
    for info in sorted(source.glob("*.dist-info")):
        name = info.name.split("-")[0].lower()
        if not name.startswith(prefixes) or name in have or not (info / "RECORD").is_file():
            continue
        with open(info / "RECORD", newline="") as record:
            paths = [row[0] for row in csv.reader(record) if row and not row[0].startswith("..")]
        for relative in paths:
            src, dst = source / relative, target / relative
            if not src.is_file() or dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        count += 1
    return count


if __name__ == "__main__":
    print(linked(Path(sys.argv[1]), Path(sys.argv[2]), tuple(p.lower() for p in sys.argv[3:])))
