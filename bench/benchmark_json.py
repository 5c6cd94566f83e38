"""Reading Google Benchmark's JSON output, shared by the report scripts."""
import json

SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(path):
    """Benchmark rows by name: the median aggregate when the run has repetitions, else the
    single iteration row. A `/real_time` suffix (UseRealTime) is dropped from names."""
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") == "iteration" and name in rows and rows[name].get("_median"):
            continue
        entry = dict(b)
        entry["_median"] = b.get("run_type") == "aggregate"
        rows[name] = entry
    return rows


def seconds(entry, key):
    """The entry's `cpu_time` or `real_time` in seconds."""
    return entry[key] * SECONDS_PER_UNIT[entry.get("time_unit", "ns")]
