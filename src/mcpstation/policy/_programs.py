"""What kind of program a command names: shells, interpreters, runners, relays, ... by base name.

`program_name` folds the spellings one executable goes by (`/usr/bin/Python3.12.exe` → `python`,
`nc.openbsd` → `nc`, `bash-5.2` → `bash`) so that no odd spelling slips past a table below.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath

SHELLS = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "oksh", "loksh", "pdksh", "yash", "posh", "fish", "csh", "tcsh",
    "ash", "hush", "rbash", "rc", "es", "nu", "nushell", "xonsh", "elvish", "ion", "osh", "ysh", "oil", "murex",
    "scsh", "sash", "cmd", "powershell", "pwsh", "powershell_ise", "wsl", "git-bash",
})  # fmt: skip
SHELL_HOSTS = frozenset({"busybox", "toybox"})  # `busybox APPLET ARGS`: judged as the applet
PYTHONS = frozenset({"python", "pypy", "py", "ipython", "jython", "graalpy", "micropython", "pyston", "cpython"})
NODES = frozenset({"node", "nodejs", "iojs", "tsx", "ts-node", "esno", "esr"})
# interpreters other than Python and Node: letters whose flag is a program, letters whose flag
# makes the interpreter read its program from stdin, letters that take a value, long inline options
OTHER_INTERPRETERS: dict[str, tuple[str, str, str, frozenset[str]]] = {
    "ruby": ("e", "", "ICEFKWTrx0", frozenset()),
    "perl": ("eE", "", "CDIMmixd", frozenset()),
    "php": ("rBRE", "a", "cdfFtzSs", frozenset()),
    "lua": ("e", "i", "lW", frozenset()),
    "luajit": ("e", "i", "lbjO", frozenset()),
    "rscript": ("e", "", "", frozenset({"--eval"})),
    "r": ("e", "", "fg", frozenset({"--eval"})),
    "osascript": ("e", "i", "ls", frozenset()),
    "julia": ("eE", "i", "JCLOHtpgm", frozenset({"--eval", "--print"})),
    "elixir": ("e", "", "r", frozenset({"--eval"})),
    "groovy": ("e", "", "cD", frozenset()),
    "jrunscript": ("e", "", "flq", frozenset()),
    "scala": ("e", "", "", frozenset({"--eval"})),
    "tclsh": ("", "", "", frozenset()),
    "wish": ("", "", "", frozenset()),
    "swift": ("e", "", "", frozenset()),
}
# interpreters that, given no script, read their program from stdin: the MCP messages
STDIN_READERS = frozenset({
    "ruby", "perl", "php", "lua", "luajit", "r", "osascript", "julia", "tclsh", "wish", "swift", "scala",
})  # fmt: skip
NODE_RUNNERS = frozenset({"npx", "pnpx", "bunx"})  # `<runner> [opts] pkg ...`
# `<tool> <sub> [opts] pkg ...`
SUB_RUNNERS: dict[str, frozenset[str]] = {
    "npm": frozenset({"exec", "x"}),
    "pnpm": frozenset({"dlx", "exec"}),
    "yarn": frozenset({"dlx"}),
    "bun": frozenset({"x"}),
}
# package managers and the subcommands or flags that install something
INSTALL_VERBS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "download", "wheel"}),
    "pipx": frozenset({"install", "inject", "upgrade", "upgrade-all", "reinstall", "reinstall-all", "install-all",
                       "runpip"}),
    "uv": frozenset({"install", "add", "sync"}),
    "poetry": frozenset({"add", "install"}),
    "pdm": frozenset({"add", "install", "sync"}),
    "pipenv": frozenset({"install", "sync"}),
    "conda": frozenset({"install", "create", "update"}),
    "mamba": frozenset({"install", "create", "update"}),
    "micromamba": frozenset({"install", "create", "update"}),
    "npm": frozenset({"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "add", "ci",
                      "install-test", "it", "install-ci-test", "cit", "link", "ln", "update", "up", "upgrade",
                      "rebuild", "rb"}),
    "yarn": frozenset({"add", "install", "global", "up", "upgrade", "link"}),
    "pnpm": frozenset({"add", "install", "i", "update", "up", "upgrade", "link", "ln"}),
    "bun": frozenset({"add", "a", "install", "i", "link", "update", "upgrade"}),
    "deno": frozenset({"install", "add", "upgrade"}),
    "gem": frozenset({"install", "update"}),
    "bundle": frozenset({"install", "add", "update"}),
    "cargo": frozenset({"install"}),
    "go": frozenset({"install", "get"}),
    "composer": frozenset({"require", "install", "global", "update"}),
    "apt": frozenset({"install", "reinstall", "build-dep"}),
    "apt-get": frozenset({"install", "reinstall", "build-dep"}),
    "aptitude": frozenset({"install", "reinstall"}),
    "dnf": frozenset({"install", "reinstall", "localinstall"}),
    "yum": frozenset({"install", "reinstall", "localinstall"}),
    "microdnf": frozenset({"install"}),
    "zypper": frozenset({"install", "in"}),
    "apk": frozenset({"add"}),
    "brew": frozenset({"install", "reinstall", "tap"}),
    "port": frozenset({"install"}),
    "snap": frozenset({"install"}),
    "flatpak": frozenset({"install"}),
    "nix-env": frozenset(),
    "nix": frozenset({"install"}),
    "choco": frozenset({"install"}),
    "winget": frozenset({"install"}),
    "scoop": frozenset({"install"}),
    "dotnet": frozenset({"install"}),
    "luarocks": frozenset({"install"}),
    "opam": frozenset({"install"}),
    "cabal": frozenset({"install"}),
    "stack": frozenset({"install"}),
    "mise": frozenset({"install"}),
    "asdf": frozenset({"install"}),
    "easy_install": frozenset(),
    "cpan": frozenset(),
    "cpanm": frozenset(),
    "msiexec": frozenset(),
}  # fmt: skip
INSTALL_FLAGS: dict[str, frozenset[str]] = {
    "pacman": frozenset({"-S", "-U", "--sync", "--upgrade"}),
    "dpkg": frozenset({"-i", "--install", "--unpack"}),
    "rpm": frozenset({"-i", "-U", "-F", "--install", "--upgrade", "--freshen"}),
    "nix-env": frozenset({"-i", "--install"}),
}
ALWAYS_INSTALLS = frozenset({"easy_install", "cpan", "cpanm", "msiexec", "pacman", "dpkg", "rpm", "nix-env"})
# relays between stdio and the network: reverse shells, and ways around the URL guard
RELAYS = frozenset({
    "nc", "ncat", "netcat", "socat", "pwncat", "pwncat-cs", "cryptcat", "sbd", "gs-netcat", "rcat", "dbd",
    "powercat", "nc64", "telnet", "rsh", "rlogin", "rexec", "mosh", "websocat", "openssl", "stunnel", "ngrok",
    "cloudflared", "chisel", "frpc", "bore", "plink", "telnetd", "tcpsvd", "udpsvd", "httpd", "ftpd", "tftpd",
    "inetd", "sshd", "dropbear",
})  # fmt: skip
DOWNLOADERS = frozenset({
    "curl", "wget", "wget2", "aria2c", "axel", "http", "https", "xh", "xhs", "curlie", "lwp-download",
    "lwp-request", "tftp", "ftp", "lftp", "sftp", "scp", "rsync", "rclone", "certutil", "bitsadmin", "gsutil",
})  # fmt: skip
PRIVILEGE = frozenset({
    "sudo", "sudoedit", "doas", "su", "run0", "pkexec", "runas", "gosu", "su-exec", "chroot", "nsenter", "unshare",
    "runuser", "setpriv", "capsh", "setuidgid", "s6-setuidgid", "chpst", "systemd-run", "machinectl", "sg",
    "newgrp", "start-stop-daemon",
})  # fmt: skip
DESTRUCTIVE = frozenset({
    "rm", "rmdir", "del", "erase", "rd", "dd", "shred", "wipefs", "fdisk", "sfdisk", "parted", "format", "mkfs",
    "mkswap", "truncate", "shutdown", "reboot", "halt", "poweroff", "init", "kill", "killall", "pkill", "chmod",
    "chown", "chgrp", "chattr", "crontab", "iptables", "nft", "mount", "umount", "systemctl", "launchctl",
    "diskutil", "reg", "bcdedit", "vssadmin", "cipher", "mv", "ln",
})  # fmt: skip
# programs that run a program given on their command line (or a shell line)
INLINE_RUNNERS = frozenset({
    "awk", "gawk", "mawk", "nawk", "busybox-awk", "sed", "gsed", "dc", "expect", "eval", "exec", "xargs", "find",
    "source", "watch", "script", "parallel", "flock", "at", "batch", "mshta", "rundll32", "regsvr32", "wmic",
    "schtasks", "forfiles", "msbuild", "installutil", "cmstp", "regasm", "regsvcs", "odbcconf", "wscript",
    "cscript", "erl", "open", "xdg-open", "start", "explorer", "gio",
})  # fmt: skip
# interactive programs that read commands from stdin and can run a shell: the MCP messages would drive them
INTERACTIVE = frozenset({
    "vi", "vim", "nvim", "view", "ex", "ed", "emacs", "nano", "less", "more", "most", "man", "gdb", "lldb",
    "pdb", "jshell", "iex", "irb", "tmux", "screen", "xterm", "gnome-terminal", "konsole", "alacritty", "kitty",
    "wezterm", "terminator", "mintty", "conhost", "mysql", "psql", "sqlite3", "redis-cli", "mongo", "mongosh",
})  # fmt: skip
# wrappers that run their argv directly, with options we parse exactly
WRAPPERS = frozenset({"env", "nohup", "nice", "ionice", "timeout", "stdbuf", "setsid", "time", "command", "caffeinate"})
# wrappers whose options we do not parse: every argument is judged as if it were the command
LOOSE_WRAPPERS = frozenset({
    "strace", "ltrace", "valgrind", "firejail", "bwrap", "proxychains", "proxychains4", "torsocks", "tsocks",
    "faketime", "fakeroot", "tini", "dumb-init", "catatonit", "unbuffer", "rlwrap", "setarch", "linux32",
    "linux64", "prlimit", "numactl", "chrt", "taskset", "cpulimit", "chronic", "sandbox-exec", "arch", "xvfb-run",
    "dbus-run-session", "ssh-agent", "nix-shell", "direnv", "dotenv", "cross-env", "env-cmd", "concurrently",
    "nodemon", "pm2", "forever", "entr", "reflex", "air", "supervisord",
})  # fmt: skip
CONTAINERS = frozenset({"docker", "podman", "nerdctl", "ctr", "kubectl", "lxc", "singularity", "apptainer"})
SSH_CLIENTS = frozenset({"ssh", "autossh", "slogin"})
DEBUG_SERVERS = frozenset({"gdbserver", "dlv", "debugpy", "ptvsd", "rdbg"})

_WINDOWS_SUFFIXES = (".exe", ".cmd", ".bat", ".ps1", ".com", ".vbs")
_ALTERNATIVE_SUFFIX = re.compile(
    r"^(?P<stem>[a-z0-9]+(?:-[a-z]+)?)[.](?:openbsd|traditional|bsd|gnu|static|real|distrib)$"
)
_VERSIONED = re.compile(r"^(?P<stem>[a-z][a-z_-]*?[a-z])[-_.]?v?\d[\d.]*[dmtu]{0,3}(?:-(?:dbg|debug))?$")
KNOWN = (
    SHELLS | SHELL_HOSTS | PYTHONS | NODES | frozenset(OTHER_INTERPRETERS) | NODE_RUNNERS | frozenset(SUB_RUNNERS)
    | frozenset(INSTALL_VERBS) | frozenset(INSTALL_FLAGS) | RELAYS | DOWNLOADERS | PRIVILEGE | DESTRUCTIVE
    | INLINE_RUNNERS | INTERACTIVE | WRAPPERS | LOOSE_WRAPPERS | CONTAINERS | SSH_CLIENTS | DEBUG_SERVERS
    | frozenset({"deno", "bun", "uvx", "uv", "pipx", "git", "java", "mkfs", "docker-compose", "podman-compose"})
)  # fmt: skip


def base_name(command: str) -> str:
    """The last path component, as written (either slash counts)."""
    return PureWindowsPath(command).name if "\\" in command else PurePosixPath(command).name


def program_name(command: str) -> str:
    """The executable's base name, lower-cased, without Windows suffix, version or distro alternative.

    `python3.11` → `python`, `Bash.EXE` → `bash`, `nc.openbsd` → `nc`, `mkfs.ext4` → `mkfs`. A name
    that is not a known program keeps its digits (`server2` stays `server2`).
    """
    name = base_name(command).lower().rstrip(". ")
    for suffix in _WINDOWS_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    if name.startswith("mkfs"):
        return "mkfs"
    if name in KNOWN:
        return name
    if (match := _ALTERNATIVE_SUFFIX.match(name)) and match["stem"] in KNOWN:
        return match["stem"]
    if (match := _VERSIONED.match(name)) and match["stem"] in KNOWN:
        return match["stem"]
    if name in {"pythonw", "pyw"}:
        return name[:-1]
    return name


def is_known(command: str) -> bool:
    """Whether `command` names a program one of the tables above knows."""
    return program_name(command) in KNOWN
