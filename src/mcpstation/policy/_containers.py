"""Container launches: always a person's call, and refused when they hand the container the host.

Refused: `--privileged`, host namespaces (`--pid=host`, `--network host`, ...), added capabilities
and devices, unconfined security profiles, the engine's API socket, bind mounts of system or
credential directories, and an entrypoint or command overridden to a shell (or to anything the
deny rules refuse, judged by name: inside a container host paths mean nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpstation.policy._programs import SHELLS, program_name
from mcpstation.policy._verdicts import CommandVerdict, Judge, Rule, Verdict, confirm, deny

ENGINES = frozenset({"docker", "podman", "nerdctl"})
GLOBAL_VALUE_OPTIONS = frozenset({"-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert",
                                  "--tlscert", "--tlskey", "--url", "--connection", "--root", "--runroot"})  # fmt: skip
RUN_SHORT_VALUE_LETTERS = "evpwulmhac"
RUN_VALUE_OPTIONS = frozenset({
    "--name", "--env", "--env-file", "--volume", "--mount", "--publish", "--expose", "--workdir", "--user",
    "--label", "--label-file", "--memory", "--memory-swap", "--memory-reservation", "--hostname", "--domainname",
    "--add-host", "--cpus", "--cpu-shares", "--cpuset-cpus", "--cpuset-mems", "--network", "--net",
    "--network-alias", "--net-alias", "--pull", "--platform", "--restart", "--log-driver", "--log-opt",
    "--security-opt", "--cap-add", "--cap-drop", "--device", "--device-cgroup-rule", "--dns", "--dns-search",
    "--dns-option", "--dns-opt", "--tmpfs", "--ulimit", "--gpus", "--runtime", "--shm-size", "--stop-signal",
    "--stop-timeout", "--cidfile", "--cgroupns", "--cgroup-parent", "--pid", "--ipc", "--uts", "--userns",
    "--volumes-from", "--health-cmd", "--health-interval", "--health-retries", "--health-timeout",
    "--health-start-period", "--link", "--mac-address", "--ip", "--ip6", "--sysctl", "--storage-opt",
    "--annotation", "--entrypoint", "--attach", "--isolation", "--kernel-memory", "--blkio-weight", "--pids-limit",
    "--oom-score-adj", "--group-add", "--detach-keys", "--volume-driver", "--cpu-period", "--cpu-quota",
    "--memory-swappiness", "--device-read-bps", "--device-write-bps", "--device-read-iops", "--device-write-iops",
    "--privileged-without-host-devices", "--arch", "--os", "--variant",
})  # fmt: skip
HOST_NAMESPACE_OPTIONS = frozenset({"--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--network", "--net"})
HOST_GRANTING_OPTIONS = frozenset({"--cap-add", "--device", "--device-cgroup-rule"})
HOST_GRANTING_FLAGS = frozenset({"--privileged", "--use-api-socket"})
SYSTEM_TREES = ("/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/run", "/var/run", "/var/lib/docker",
                "/var/lib/containers", "/var/lib/kubelet")  # fmt: skip
SYSTEM_ROOTS = frozenset({"/", "/home", "/var", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/srv", "/mnt",
                          "/users", "~", "$home", "${home}", "c:", "c:\\", "c:/"})  # fmt: skip
CREDENTIAL_DIRECTORIES = ("/.ssh", "/.aws", "/.kube", "/.docker", "/.gnupg", "/.config/gcloud", "/.azure", "/.npmrc",
                          "/.pypirc", "/.netrc", "/.git-credentials")  # fmt: skip


def _mount_source(option: str, value: str) -> str:
    if option == "--mount":
        fields = dict(part.partition("=")[::2] for part in value.split(","))
        return fields.get("source") or fields.get("src") or ""
    if len(value) > 1 and value[0].isalpha() and value[1] == ":":
        return value[:2]  # a Windows drive
    return value.split(":", 1)[0]


def _mount_problem(name: str, option: str, value: str) -> CommandVerdict | None:
    source = _mount_source(option, value).strip()
    lowered = source.lower().rstrip("/") or "/"
    tilde = lowered.startswith(("~", "$home", "${home}"))
    if (
        lowered in SYSTEM_ROOTS
        or lowered.endswith(".sock")
        or any(lowered == tree or lowered.startswith(tree + "/") for tree in SYSTEM_TREES)
        or any(part in ("/" + lowered if tilde else lowered) for part in CREDENTIAL_DIRECTORIES)
    ):
        return deny(Rule.CONTAINER_PRIVILEGE, f"{name} mounts {source} from the host into the container")
    return None


def _option_problem(name: str, option: str, value: str | None) -> CommandVerdict | None:
    lowered = (value or "").lower()
    if option in HOST_GRANTING_FLAGS:
        return deny(Rule.CONTAINER_PRIVILEGE, f"{name} {option} gives the container the host's privileges")
    if option in HOST_NAMESPACE_OPTIONS and lowered == "host":
        return deny(Rule.CONTAINER_PRIVILEGE, f"{name} {option} host gives the container the host's {option[2:]}")
    if option in HOST_GRANTING_OPTIONS:
        return deny(Rule.CONTAINER_PRIVILEGE, f"{name} {option} {value} gives the container host capabilities")
    if option == "--security-opt" and ("unconfined" in lowered or "disable" in lowered):
        return deny(Rule.CONTAINER_PRIVILEGE, f"{name} --security-opt {value} turns off the container's confinement")
    if option in {"--volume", "--mount"} and value is not None:
        return _mount_problem(name, option, value)
    return None


def _entrypoint_problem(name: str, entrypoint: str, command: Sequence[str], judge: Judge) -> CommandVerdict | None:
    if not entrypoint:
        return None
    if program_name(entrypoint) in SHELLS:
        return deny(Rule.CONTAINER_SHELL, f"{name} --entrypoint {entrypoint} overrides the image's server with a shell")
    verdict = judge(entrypoint, command)
    if verdict.verdict is Verdict.DENY:
        return verdict.within(f"{name} --entrypoint {entrypoint}")
    return None


def _command_problem(name: str, command: Sequence[str], judge: Judge) -> CommandVerdict | None:
    if not command:
        return None
    verdict = judge(command[0], command[1:])
    if verdict.verdict is not Verdict.DENY:
        return None
    if program_name(command[0]) in SHELLS:
        return CommandVerdict(
            Verdict.DENY, f"{name} runs a shell in the container: {verdict.reason}", Rule.CONTAINER_SHELL
        )
    return verdict.within(f"{name} runs {command[0]!r} in the container")


def _run_verdict(name: str, args: Sequence[str], judge: Judge, *, exec_into: bool) -> CommandVerdict:
    """`run|create|exec [options] IMAGE|CONTAINER [COMMAND...]`."""
    entrypoint = ""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        if arg.startswith("--"):
            option, has_value, inline = arg.partition("=")
            value: str | None = None
            if option in RUN_VALUE_OPTIONS:
                value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
                index += 0 if has_value else 1
            elif has_value:
                value = inline
            if problem := _option_problem(name, option, value):
                return problem
            if option == "--entrypoint":
                entrypoint = value or ""
        else:
            letters = arg[1:]
            for position, letter in enumerate(letters):
                if letter not in RUN_SHORT_VALUE_LETTERS:
                    continue
                value = letters[position + 1 :].removeprefix("=")
                if not value:
                    index += 1
                    value = args[index] if index < len(args) else ""
                if letter == "v" and (problem := _mount_problem(name, "--volume", value)):
                    return problem
                break
        index += 1
    rest = args[index:]
    if not rest:
        return confirm(Rule.CONTAINER, f"{name} without an image")
    target, command = rest[0], rest[1:]
    if problem := _entrypoint_problem(name, entrypoint, command, judge) if not exec_into else None:
        return problem
    if not entrypoint and (problem := _command_problem(name, command, judge)):
        return problem
    return confirm(Rule.CONTAINER, f"{name} runs the image {target!r}; a person should check the image and its options")


def container_verdict(name: str, args: Sequence[str], judge: Judge) -> CommandVerdict:
    """Judge a container launch; `judge` classifies a command inside the container (by name only)."""
    if name in ENGINES:
        index = 0
        while index < len(args) and args[index].startswith("-"):
            index += 2 if args[index] in GLOBAL_VALUE_OPTIONS else 1
        words = list(args[index:])
        if words[:1] == ["container"]:
            words = words[1:]
        if words and words[0] in {"run", "create", "exec"}:
            return _run_verdict(name, words[1:], judge, exec_into=words[0] == "exec")
        if (
            words
            and words[0] in {"compose", "debug"}
            and (problem := _command_problem(name, words[words.index("--") + 1 :], judge) if "--" in words else None)
        ):
            return problem
        return confirm(Rule.CONTAINER, f"{name} {' '.join(words[:1])} runs containers; a person should check it")
    if name in {"singularity", "apptainer"} and args[:1] == ["shell"]:
        return deny(Rule.CONTAINER_SHELL, f"{name} shell opens a shell in the container")
    if name == "lxc" and args[:1] == ["shell"]:
        return deny(Rule.CONTAINER_SHELL, "lxc shell opens a shell in the container")
    if "--" in args and (problem := _command_problem(name, args[list(args).index("--") + 1 :], judge)):
        return problem
    if name in {"singularity", "apptainer"} and args[:1] == ["exec"] and len(args) > 2:
        if problem := _command_problem(name, args[2:], judge):
            return problem
    return confirm(Rule.CONTAINER, f"{name} runs containers; a person should check the image and its options")
