"""Print what a GPU check's JSON report holds: its summary, engines and every bug (scripts/gpu_check.sh)."""
import json
import sys

try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    sys.exit(f"no report: {exc}")
print("summary:", json.dumps(report.get("summary"))[:1500])
print("engines:", json.dumps(report.get("engines"))[:1500])
for bug in report.get("bugs", []):
    print("bug:", bug.get("library") or bug.get("backend"), bug.get("kind"), bug.get("device"), str(bug.get("message"))[:160])
