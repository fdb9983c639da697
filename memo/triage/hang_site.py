"""Where a hang's minimal script was stopped by its watchdog (:mod:`memo.filing.hang`): the innermost frame of the
script's own thread in faulthandler's dump, which the check keeps (``minimal/check.json``). Blame reads it: a Keras
backend's hang stopped inside the library the backend delegates to (OpenVINO's ``compile_model`` under Keras on
OpenVINO, t59) is that library's, as a crash in its code is (:func:`memo.backends.documented.delegated_library`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from memo.backends import find_spec
from memo.backends.spec import BackendSpec
from memo.bug_files import MINIMAL_CHECK_FILE, MINIMAL_DIR

HANG_SYMPTOM = "Timeout (0"  # faulthandler's first line when the watchdog fires: "Timeout (0:01:00)!"
_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')


def watchdog_frame(output: str) -> tuple[str, str, str] | None:
    """(path from the package on, line, function) of the innermost frame of the thread running ``<module>`` (the
    script's own; faulthandler prints the most recent call first) in a dump the watchdog printed; None without one."""
    found = output.find(HANG_SYMPTOM)
    threads = output[found:].split("\n\n") if found >= 0 else []
    main = [block for block in threads if "in <module>" in block] or threads
    frame = _FRAME.search(main[0]) if main else None
    if frame is None:
        return None
    return frame.group(1).split("site-packages/")[-1], frame.group(2), frame.group(3)


def hang_site(output: str) -> str:
    """:func:`watchdog_frame` as a text says it: ``function`` (path:line); "" without one."""
    frame = watchdog_frame(output)
    return f"`{frame[2]}` ({frame[0]}:{frame[1]})" if frame else ""


def hang_delegate(library: str, folder: Path | None) -> str | None:
    """The library a hang of ``library`` belongs to when its checked script's watchdog stopped it inside the package
    of a library its spec delegates to; None otherwise (no check yet, or the stall in its own code)."""
    spec = find_spec(library)
    check = folder / MINIMAL_DIR / MINIMAL_CHECK_FILE if folder is not None else None
    if not isinstance(spec, BackendSpec) or not spec.delegates or check is None or not check.is_file():
        return None
    try:
        output = str(json.loads(check.read_text()).get("output") or "")
    except (OSError, ValueError):
        return None
    frame = watchdog_frame(output)
    package = frame[0].split("/", 1)[0] if frame else ""
    return next((other for _, other in spec.delegates if other == package), None)


__all__ = ["HANG_SYMPTOM", "hang_delegate", "hang_site", "watchdog_frame"]
