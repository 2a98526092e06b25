#!/usr/bin/env python3
"""analysis/design_table.py on made-up training outputs: a design with both checks' JSON gets
its figures, the bars it meets in bold and its count of met bars (here 5 of 7: bits per byte
and the window sweep missed); a design without logs shows "-" and is counted over its two eval.json bars; the
longest learned head skips the fixed heads; a record folder (the same files unpacked, as kept
under results/) gives the same row as the call's output; bad input (not a folder, neither
NAME-rest.tar nor eval.json, a rest.tar without eval.json, a drift JSON of the wrong shape, a
record without "model", a record's check that is not JSON) exits 2 with one line naming the
file."""
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, "analysis", "design_table.py")
M = "nemotronh-m2-tiny"


def tar_of(path, members):
    with tarfile.open(path, "w") as t:
        for name, data in members.items():
            b = data.encode() if isinstance(data, str) else json.dumps(data).encode()
            info = tarfile.TarInfo(name)
            info.size = len(b)
            t.addfile(info, io.BytesIO(b))


def evaluation(bpb, past, tokens, init_from=None):
    return {"tokens": tokens, "heldout_bpb_fp32": bpb, "init_from": init_from,
            "long_windows": {"degradation": past},
            "slow_heads": [{"layer": 0, "head": 7, "role": "slow"},
                           {"layer": 0, "head": 6, "role": "medium"}],
            "head_memories_moby": [{"layer": 0, "head": 0, "memory": 1.0},
                                   {"layer": 0, "head": 1, "memory": 12.5},
                                   {"layer": 0, "head": 6, "memory": 160.0},
                                   {"layer": 0, "head": 7, "memory": 4096.0}]}


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        full, bare = os.path.join(d, "s4m160"), os.path.join(d, "c160")
        os.makedirs(full)
        os.makedirs(bare)
        tar_of(os.path.join(full, f"{M}-rest.tar"), {"eval.json": evaluation(2.131, 0.0150, 111e6)})
        drift = [{"shared_growth": 10.5, "split_growth": 2.6, "ratio": 16.7, "control_max": 6e-12,
                  "verdicts": {"ratio": True, "shared_growth": True, "split_growth": True,
                               "control_max": True}}]
        ctx = [{"context": 0.004, "context_se": 0.0017, "text": 0.011}]
        tar_of(os.path.join(full, "train-logs.tar"), {f"./drift-{M}.json": drift,
                                                      f"./context-{M}.json": ctx,
                                                      f"./sweep-{M}.json": [{"max_over_min": 2.59, "met": False}],
                                                      f"./full-{M}.log": "log"})
        tar_of(os.path.join(bare, f"{M}-rest.tar"),
               {"eval.json": evaluation(2.045, 0.024, 111.1e6, "x/y")})
        js = os.path.join(d, "t.json")
        r = run(full, bare, "--json", js)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 4, r.stdout
        assert lines[2] == ("| s4m160 | 111.0M | 2.131 | **+0.0150**: +0.0040 +- 0.0017 / +0.0110 "
                            "| **10.50** | **2.60** | **16.7** | **6.0e-12** | 2.59 | 12.5 | 5 of 7 |"), \
            lines[2]
        assert lines[3] == ("| c160 | 111.1M (continued) | **2.045** | +0.0240 | - | - | - | - "
                            "| - | 12.5 | 1 of 2 |"), lines[3]
        rows = json.load(open(js))
        assert [r_["bars_met"] for r_ in rows] == [5, 1], rows
        assert rows[0]["longest_learned"] == 12.5 and rows[0]["text"] == 0.011, rows[0]
        assert rows[0]["sweep"] == 2.59 and rows[0]["sweep_met"] is False, rows[0]
        # the record of s4m160 as kept under results/ (eval.json with "model", the checks beside
        # it): the same row, named after its folder
        rec = os.path.join(d, "rec", "s4m160")
        os.makedirs(rec)
        ev = dict(evaluation(2.131, 0.0150, 111e6), model=M)
        for name, data in (("eval.json", ev), (f"drift-{M}.json", drift),
                           (f"context-{M}.json", ctx),
                           (f"sweep-{M}.json", [{"max_over_min": 2.59, "met": False}])):
            with open(os.path.join(rec, name), "w") as f:
                json.dump(data, f)
        r = run(rec)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.splitlines()[2] == lines[2], (r.stdout, lines[2])
        nomodel = os.path.join(d, "nomodel")
        os.makedirs(nomodel)
        with open(os.path.join(nomodel, "eval.json"), "w") as f:
            json.dump(evaluation(2.1, 0.01, 1e6), f)
        badrec = os.path.join(d, "badrec")
        os.makedirs(badrec)
        with open(os.path.join(badrec, "eval.json"), "w") as f:
            json.dump(ev, f)
        with open(os.path.join(badrec, f"sweep-{M}.json"), "w") as f:
            f.write("{not json")
        # bad input: exit 2, one line on stderr naming the file
        noeval = os.path.join(d, "noeval")
        os.makedirs(noeval)
        tar_of(os.path.join(noeval, f"{M}-rest.tar"), {"config.json": {}})
        badlog = os.path.join(d, "badlog")
        os.makedirs(badlog)
        tar_of(os.path.join(badlog, f"{M}-rest.tar"), {"eval.json": evaluation(2.1, 0.01, 1e6)})
        tar_of(os.path.join(badlog, "train-logs.tar"), {f"./drift-{M}.json": {"ratio": 3}})
        for path, want in [(os.path.join(d, "none"), "not a directory"),
                           (d, "no NAME-rest.tar and no eval.json"),
                           (nomodel, "eval.json: no field 'model'"),
                           (badrec, f"sweep-{M}.json: not JSON"),
                           (noeval, "no member eval.json"),
                           (badlog, "expected a list of one check")]:
            r = run(path)
            assert r.returncode == 2, (path, r.stdout, r.stderr)
            assert want in r.stderr and r.stderr.count("\n") == 1, (path, r.stderr)
    print("test_design_table: ok")


if __name__ == "__main__":
    main()
