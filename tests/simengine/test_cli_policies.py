"""python -m simengine policies | schedulers | run: every kind of policy listed with its policies and
parameters (a parameter naming another policy with the names it takes), and scenarios run with the
Python-written claiming, reservation admission and stateful site allocation (issue 35: "the builder,
API schema and CLI list and run them")."""
from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO

import pytest
import yaml

import simengine
from simengine import policy_fields
from simengine.cli import main
from tests.conftest import ROOT

pytest.importorskip("gridweb_example_policies.claiming")  # the worked package (make venv installs it)


def cli(*args: str) -> tuple[int, str]:
    out = StringIO()
    with redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def test_policies_lists_every_kind_every_policy_and_every_parameter():
    code, text = cli("policies")
    assert code == 0
    found = policy_fields.registries()
    kinds = [line for line in text.splitlines() if not line.startswith(" ")]
    assert len(kinds) == len(found)  # one heading per registry, the victim choice's too
    for (key, registry), heading in zip(found.items(), kinds):
        assert f"({key}; named at " in heading
        block = text[text.index(heading):]
        for name in registry.names():
            assert f"\n  {name}  {registry.get(name).summary}" in block
            policy = block[block.index(f"\n  {name}  "):]
            for field in registry.get(name).params.model_fields:
                assert f"\n      {field}  " in policy, (key, name, field)
    # a parameter naming another policy: its kind and the names it takes
    rars = text[text.index("\n  rars-heft  "):]
    admission = rars[rars.index("\n      admission  "):].split("\n")[1]
    assert f"a reservation admission policy (reservation_admission): " \
           f"{', '.join(found['reservation_admission'].names())}; default " in admission
    koala = text[text.index("\n  koala  "):]
    assert "\n      preemption  a preemption policy (preemption): kill, none, requeue; default " in koala
    assert "named at the params.admission of workflow_scheduling rars-heft" in text
    assert "named at platform.clusters.*.scheduler" in text and "named at grid.claiming" in text


def test_policies_of_one_kind_as_json():
    code, text = cli("policies", "claiming", "--json")
    assert code == 0
    data = json.loads(text)
    registry = policy_fields.registries()["claiming"]
    assert list(data) == ["claiming"] and data["claiming"]["named_at"] == ["grid.claiming"]
    assert [p["name"] for p in data["claiming"]["policies"]] == registry.names()
    for policy in data["claiming"]["policies"]:
        assert policy["params_schema"] == registry.get(policy["name"]).params.model_json_schema()


def test_an_unknown_kind_is_named_with_the_known_ones(capsys):
    assert main(["policies", "claimming"]) == 2
    err = capsys.readouterr().err
    assert "KIND: unknown kind of policy 'claimming'" in err and "claiming" in err and "victims" in err


def test_schedulers_writes_a_nested_policys_default_as_a_scenario_would():
    code, text = cli("schedulers")
    assert code == 0 and "PydanticUndefined" not in text
    assert "admission={'name': 'earliest-lft', 'params': {}}" in text


def cao() -> dict:
    data = yaml.safe_load((ROOT / "examples" / "cao-scojo-rars.yaml").read_text())
    for stream in data["workload"]["streams"]:
        stream["count"] = 120
    data["grid"]["workflow_scheduling"]["params"]["admission"] = {"name": "rigid-frame", "params": {"behind": 60}}
    return data


def koala() -> dict:
    data = yaml.safe_load((ROOT / "examples" / "koala-w30.yaml").read_text())
    data["grid"]["claiming"] = {"name": "python-icp"}
    return data


def zikos() -> dict:
    data = yaml.safe_load((ROOT / "examples" / "zikos-random.yaml").read_text())
    data["grid"]["site_allocation"] = {"name": "python-sb-deferred", "params": {"sdt": 2.0}}
    data["run"].update(stop={"completions": 400}, warmup={"completions": 50})
    return data


@pytest.mark.parametrize("make,path,name", [
    (cao, ("grid", "workflow_scheduling", "params", "admission"), "rigid-frame"),
    (koala, ("grid", "claiming"), "python-icp"),
    (zikos, ("grid", "site_allocation"), "python-sb-deferred"),
])
def test_run_a_scenario_with_a_python_policy_of_each_kind(tmp_path, make, path, name):
    """The command line gives the Python API's result (the reference) for the same document."""
    data = make()
    data["run"]["replications"] = 1
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    code, _ = cli("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--quiet")
    assert code == 0
    written = json.loads((tmp_path / "out" / "scenario.json").read_text())
    for part in path:
        written = written[part]
    assert written["name"] == name
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    reference = json.loads(json.dumps(simengine.run(data).summary()))
    assert summary["job_counts"]["completed"] > 0
    for key in ("scenario_hash", "job_counts", "metrics", "jobs"):
        assert summary[key] == reference[key], key
