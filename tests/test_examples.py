"""The multi-machine examples parse: YAML by PyYAML, shell by `bash -n`; the Kubernetes YAML is
valid for the Kubernetes API (by kubernetes-validate's schemas). No cluster needed."""

import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

EXAMPLES = Path(__file__).parents[1] / "examples"
DOCKERFILE_INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def bash_syntax_error(script: str) -> str:
    check = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    return check.stderr if check.returncode else ""


SCRIPTS = sorted(EXAMPLES.rglob("*.sbatch")) + sorted(EXAMPLES.rglob("*.sh"))


@pytest.mark.parametrize("path", SCRIPTS)
def test_shell_scripts_parse(path):
    assert not bash_syntax_error(path.read_text()), path


def test_kubernetes_job_is_an_indexed_job_with_its_own_docker_engine():
    [job] = yaml.safe_load_all((EXAMPLES / "kubernetes" / "heval-job.yaml").read_text())
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    pod = spec["template"]["spec"]
    [engine] = pod["initContainers"]
    assert engine["restartPolicy"] == "Always" and engine["securityContext"]["privileged"]
    [main] = pod["containers"]
    env = {item["name"]: item.get("value") for item in main["env"]}
    assert env["DOCKER_HOST"] == "unix:///run/docker/docker.sock"
    assert int(env["PODS"]) == spec["completions"]
    # The pods' shard ranges cover the run: pod i runs shards i*k+1 ... (i+1)*k of PODS*k.
    script = main["args"][0]
    assert not bash_syntax_error(script)
    assert "--run" in script and "--log-dir" in script and "JOB_COMPLETION_INDEX" in script
    mounts = {m["name"] for c in (engine, main) for m in c.get("volumeMounts", [])}
    assert mounts <= {volume["name"] for volume in pod["volumes"]}


KUBERNETES = "1.31"  # the schemas kubernetes-validate ships for it, offline


def kubernetes_documents(path: Path) -> list[dict]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def kubernetes_api_error(document: dict) -> str:
    """Why the API server would refuse the document (strictly: no unknown field), or ""."""
    try:
        checked = kubernetes_validate.validate(document, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as error:
        return f"{'.'.join(map(str, error.path))}: {error.message}"
    except kubernetes_validate.SchemaNotFoundError as error:  # an unknown kind or apiVersion
        return error.message
    # The package falls back to an older version's schemas when it lacks the one asked for.
    return "" if checked == KUBERNETES else f"checked against {checked}, not {KUBERNETES}"


def test_kubernetes_example_is_valid_for_the_kubernetes_api(tmp_path):
    paths = sorted(
        path for path in (EXAMPLES / "kubernetes").rglob("*") if path.suffix in {".yaml", ".yml"}
    )
    assert paths
    for path in paths:
        for document in kubernetes_documents(path):
            assert not (error := kubernetes_api_error(document)), f"{path.name}: {error}"
    # A typo deep in the pod template (`resource` for `resources`) is caught, not ignored.
    [job] = kubernetes_documents(EXAMPLES / "kubernetes" / "heval-job.yaml")
    [main] = job["spec"]["template"]["spec"]["containers"]
    main["resource"] = main.pop("resources")
    broken = tmp_path / "heval-job.yaml"
    broken.write_text(yaml.safe_dump(job))
    [document] = kubernetes_documents(broken)
    assert kubernetes_api_error(document) == (
        "spec.template.spec.containers.0: Additional properties are not allowed "
        "('resource' was unexpected)"
    )
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, KUBERNETES, strict=True)


def fake_commands(folder: Path) -> Path:
    """A bin folder whose `heval-inspect` prints its arguments, and whose `docker` answers."""
    folder.mkdir()
    (folder / "heval-inspect").write_text('#!/bin/sh\necho "$@"\n')
    (folder / "docker").write_text("#!/bin/sh\nexit 0\n")
    for command in folder.iterdir():
        command.chmod(0o755)
    return folder


def ranges(outputs: list[str]) -> list[int]:
    """The shards the runs cover, from each `heval-inspect parallel --shards n --run a-b` line."""
    covered = []
    for output in outputs:
        shards = int(re.search(r"--shards (\d+)", output).group(1))
        first, last = map(int, re.search(r"--run (\d+)-(\d+)", output).groups())
        assert 1 <= first <= last <= shards
        covered += range(first, last + 1)
    return sorted(covered)


def test_kubernetes_pods_run_every_shard_once(tmp_path):
    [job] = yaml.safe_load_all((EXAMPLES / "kubernetes" / "heval-job.yaml").read_text())
    [main] = job["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item["value"] for item in main["env"] if "value" in item}
    bin_dir = fake_commands(tmp_path / "bin")
    outputs = [
        subprocess.run(
            ["bash", "-c", main["args"][0]],
            env=env | {"JOB_COMPLETION_INDEX": str(index), "PATH": f"{bin_dir}:/usr/bin:/bin"},
            capture_output=True, text=True, check=True,
        ).stdout
        for index in range(job["spec"]["completions"])
    ]  # fmt: skip
    assert ranges(outputs) == list(range(1, int(env["PODS"]) * int(env["SHARDS_PER_POD"]) + 1))
    assert all("inspect eval heval_inspect/humaneval_infilling" in output for output in outputs)


def test_slurm_array_tasks_run_every_shard_once(tmp_path):
    script = EXAMPLES / "slurm" / "heval-shards.sbatch"
    tasks = int(re.search(r"^#SBATCH --array=1-(\d+)$", script.read_text(), re.MULTILINE)[1])
    bin_dir = fake_commands(tmp_path / "bin")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text("")
    outputs = [
        subprocess.run(
            ["bash", str(script)],
            env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HEVAL_VENV": str(venv),
                 "LOG_DIR": str(tmp_path / "logs"), "SLURM_ARRAY_TASK_COUNT": str(tasks),
                 "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_JOB_ID": "7",
                 "SLURM_JOB_ID": str(100 + task), "SLURM_CPUS_PER_TASK": "32"},
            capture_output=True, text=True, check=True,
        ).stdout
        for task in range(1, tasks + 1)
    ]  # fmt: skip
    assert ranges(outputs) == list(range(1, tasks * 16 + 1))
    assert (tmp_path / "logs").is_dir()


def test_slurm_array_covers_the_run():
    text = (EXAMPLES / "slurm" / "heval-shards.sbatch").read_text()
    assert re.search(r"^#SBATCH --array=1-\d+$", text, re.MULTILINE)
    assert "SLURM_ARRAY_TASK_ID" in text and "--run" in text and "--log-dir" in text


def test_dockerfile_has_only_known_instructions():
    lines = (EXAMPLES / "kubernetes" / "Dockerfile").read_text().splitlines()
    continued = False
    for line in lines:
        if not continued and line.strip() and not line.lstrip().startswith("#"):
            assert line.split()[0] in DOCKERFILE_INSTRUCTIONS, line
        continued = line.rstrip().endswith("\\")
