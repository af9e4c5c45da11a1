"""Interpreters: inline code and programs on stdin are refused; a script waits for a person; allowlisted
modules (`python -m`) and the station's own servers start.

Options are scanned the way each interpreter reads them (short flags combine, some take a value),
so `python -Ic`, `ruby -we` and `node -pe` are seen for what they are. Debuggers listening beyond
loopback are refused, remote code with every permission (`deno run -A URL`) too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcpstation.policy._context import Context, script_verdict
from mcpstation.policy._packages import is_module_name, module_allowed
from mcpstation.policy._paths import is_path, reads_stdin, world_writable_reason
from mcpstation.policy._programs import OTHER_INTERPRETERS, STDIN_READERS
from mcpstation.policy._remote import inspect_verdict
from mcpstation.policy._runners import install_verdict, python_module_cli
from mcpstation.policy._verdicts import CommandVerdict, Judge, Rule, Verdict, allow, confirm, deny

OWN_MODULE_PREFIX = "mcpstation."
PYTHON_STDIN_MODULES = frozenset({"code", "asyncio", "pdb", "idlelib", "ipython", "ptpython", "bpython", "sqlite3"})
PYTHON_INLINE_MODULES = frozenset({"timeit"})
PYTHON_INSTALL_MODULES = frozenset({"ensurepip", "easy_install"})
NODE_VALUE_OPTIONS = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "--input-type",
                                "--env-file", "--env-file-if-exists", "-c", "--conditions", "--title"})  # fmt: skip
NODE_CODE_OPTIONS = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file",
                               "--env-file-if-exists"})  # fmt: skip
DENO_SUBCOMMANDS = frozenset({"run", "serve", "task", "test", "bench", "x", "compile"})
DENO_VALUE_OPTIONS = frozenset({"-c", "--config", "--import-map", "--lock", "--cert", "--location", "--seed",
                                "--ext", "--preload", "--watch-exclude"})  # fmt: skip
DENO_FULL_PERMISSIONS = frozenset({"-A", "--allow-all", "--allow-run", "--allow-ffi"})


def python_verdict(name: str, args: list[str], context: Context, judge: Judge) -> CommandVerdict:
    """Scan Python's options the way Python does: short flags combine, `-W`/`-X` take a value, `-m` ends them."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, f"{name} - reads its program from stdin (the MCP messages)")
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-"):
            break
        if arg.startswith("--"):
            if name == "ipython" and "." in arg.partition("=")[0]:
                return deny(Rule.INLINE_CODE, f"{name} {arg} sets IPython configuration, which can run code")
            if arg == "--check-hash-based-pycs":
                index += 1
            index += 1
            continue
        if name == "py" and (re.fullmatch(r"-[0-9][0-9.]*(?:-32|-64|t)?", arg) or arg.startswith("-V:")):
            index += 1
            continue
        flags = arg[1:]
        for position, letter in enumerate(flags):
            if letter == "c":
                return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline code")
            if letter == "i":
                return deny(Rule.STDIN_PROGRAM, f"{name} {arg} reads Python from stdin (the MCP messages)")
            if letter in "WX":
                if position == len(flags) - 1:
                    index += 1
                break
            if letter == "m":
                module = flags[position + 1 :]
                rest_at = index + 1
                if not module:
                    module = args[index + 1] if index + 1 < len(args) else ""
                    rest_at = index + 2
                return module_verdict(name, module, args[rest_at:], context, judge)
        index += 1
    if index >= len(args):
        return deny(Rule.STDIN_PROGRAM, f"{name} without a script reads its program from stdin (the MCP messages)")
    return script_verdict(name, args[index], context)


def module_verdict(name: str, module: str, rest: Sequence[str], context: Context, judge: Judge) -> CommandVerdict:
    label = f"{name} -m {module}"
    lowered = module.lower()
    if not module:
        return deny(Rule.STDIN_PROGRAM, f"{name} -m without a module")
    if lowered in PYTHON_STDIN_MODULES:
        return deny(Rule.STDIN_PROGRAM, f"{label} reads code or commands from stdin (the MCP messages)")
    if lowered in PYTHON_INLINE_MODULES:
        return deny(Rule.INLINE_CODE, f"{label} runs code given on its command line")
    if lowered in PYTHON_INSTALL_MODULES:
        return deny(Rule.PACKAGE_INSTALL, f"{label} installs packages; that is not starting a server")
    if cli := python_module_cli(module):
        return judge(cli, rest).within(label)
    if not is_module_name(module):
        return confirm(Rule.MODULE_NOT_ALLOWED, f"{label}: not a module name")
    if module.startswith(OWN_MODULE_PREFIX) and not context.in_container:
        return allow(Rule.OWN_SERVER, f"{label} is one of the station's own servers")
    if module_allowed(module, context.allowed_packages):
        return allow(Rule.ALLOWED_MODULE, f"module {module!r} is on the allowlist")
    return confirm(Rule.MODULE_NOT_ALLOWED, f"{name} runs module {module!r}, which is not on the allowlist")


def node_verdict(name: str, args: list[str], context: Context) -> CommandVerdict:
    debugger = inspect_verdict(name, args)
    if debugger is not None and debugger.verdict is Verdict.DENY:
        return debugger
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, f"{name} - reads its program from stdin (the MCP messages)")
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-"):
            break
        head, has_value, inline = arg.partition("=")
        lowered = head.lower()
        single = not arg.startswith("--")
        if lowered in {"--eval", "--print"} or (single and any(letter in head[1:] for letter in "ep")):
            return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline code")
        if lowered == "--interactive" or (single and "i" in head[1:]):
            return deny(Rule.STDIN_PROGRAM, f"{name} {arg} reads JavaScript from stdin (the MCP messages)")
        if lowered in NODE_VALUE_OPTIONS or (single and head[-1:] in {"r", "C"}):
            value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
            if value.lower().startswith("data:"):
                return deny(Rule.INLINE_CODE, f"{name} {head} with a data: URL runs inline code")
            if (lowered in NODE_CODE_OPTIONS or head[-1:] == "r") and not context.in_container:
                if reads_stdin(value):
                    return deny(Rule.STDIN_PROGRAM, f"{name} {head} {value} loads code from stdin")
                if is_path(value) and (reason := world_writable_reason(value, base=context.cwd)):
                    return deny(Rule.WORLD_WRITABLE, f"{name} {head} loads code anyone could swap: {reason}")
            index += 1 if has_value else 2
            continue
        index += 1
    if index >= len(args):
        return deny(Rule.STDIN_PROGRAM, f"{name} without a script reads its program from stdin (the MCP messages)")
    script = script_verdict(name, args[index], context)
    return script if script.verdict is Verdict.DENY or debugger is None else debugger


def bun_verdict(args: list[str], context: Context) -> CommandVerdict:
    if problem := install_verdict("bun", args):
        return problem
    if args[:1] == ["repl"]:
        return deny(Rule.STDIN_PROGRAM, "bun repl reads JavaScript from stdin (the MCP messages)")
    if (debugger := inspect_verdict("bun", args)) and debugger.verdict is Verdict.DENY:
        return debugger
    words = args[1:] if args[:1] == ["run"] else args
    for index, arg in enumerate(words):
        head = arg.partition("=")[0]
        if head in {"-e", "--eval", "-p", "--print"}:
            return deny(Rule.INLINE_CODE, f"bun {arg} runs inline code")
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, "bun - reads its program from stdin (the MCP messages)")
        if not arg.startswith("-"):
            return script_verdict("bun", words[index], context)
    return confirm(Rule.SCRIPT, "bun without a script")


def deno_verdict(args: list[str], context: Context) -> CommandVerdict:
    if problem := install_verdict("deno", args):
        return problem
    if not args:
        return deny(Rule.STDIN_PROGRAM, "deno without a script starts a REPL fed the MCP messages")
    if args[0] == "eval":
        return deny(Rule.INLINE_CODE, "deno eval runs inline code")
    if args[0] == "repl":
        return deny(Rule.STDIN_PROGRAM, "deno repl reads code from stdin (the MCP messages)")
    subcommand = args[0] if args[0] in DENO_SUBCOMMANDS else "run"
    words = args[1:] if args[0] in DENO_SUBCOMMANDS else args
    if (debugger := inspect_verdict("deno", words)) and debugger.verdict is Verdict.DENY:
        return debugger
    every_permission: str | None = None
    index = 0
    while index < len(words):
        arg = words[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, "deno run - reads its program from stdin (the MCP messages)")
        if not arg.startswith("-"):
            break
        head, has_value, _ = arg.partition("=")
        if head in DENO_FULL_PERMISSIONS or (not arg.startswith("--") and "A" in head[1:]):
            every_permission = arg
        if head in DENO_VALUE_OPTIONS and not has_value:
            index += 1
        index += 1
    if index >= len(words):
        return confirm(Rule.SCRIPT, f"deno {subcommand} without a script")
    target = words[index]
    lowered = target.lower()
    if lowered.startswith("data:"):
        return deny(Rule.INLINE_CODE, f"deno {subcommand} {target[:40]!r} runs inline code")
    if lowered.startswith(("http://", "https://", "npm:", "jsr:")):
        if every_permission is not None:
            return deny(
                Rule.REMOTE_CODE,
                f"deno {subcommand} {every_permission} {target} runs remote code with every permission",
            )
        return confirm(
            Rule.PACKAGE_SOURCE, f"deno {subcommand} runs code fetched from {target}; nothing vouches for it"
        )
    if subcommand == "task":
        return confirm(Rule.SCRIPT, f"deno task {target} runs a task from deno.json through a shell")
    return script_verdict(f"deno {subcommand}", target, context)


def java_verdict(args: list[str], context: Context) -> CommandVerdict:
    for index, arg in enumerate(args):
        if arg == "-jar" and index + 1 < len(args):
            return script_verdict("java -jar", args[index + 1], context)
        if arg.startswith("-javaagent:") and not context.in_container:
            agent = arg.removeprefix("-javaagent:").split("=", 1)[0]
            if reason := world_writable_reason(agent, base=context.cwd):
                return deny(Rule.WORLD_WRITABLE, f"java {arg} loads an agent anyone could swap: {reason}")
    return confirm(Rule.SCRIPT, "java runs a class or jar that nothing vouches for")


def interpreter_verdict(name: str, args: list[str], context: Context) -> CommandVerdict:
    inline, interactive, value_letters, long_inline = OTHER_INTERPRETERS[name]
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, f"{name} - reads its program from stdin (the MCP messages)")
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-"):
            break
        if arg.partition("=")[0].lower() in long_inline:
            return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline code")
        if arg.startswith("--"):
            index += 1
            continue
        letters = arg[1:]
        for position, letter in enumerate(letters):
            if letter in inline:
                return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline code")
            if letter in interactive:
                return deny(Rule.STDIN_PROGRAM, f"{name} {arg} reads its program from stdin (the MCP messages)")
            if letter in value_letters:
                value = letters[position + 1 :]
                if not value:
                    index += 1
                    value = args[index] if index < len(args) else ""
                if letter == "f" and name in {"r", "php"}:
                    return script_verdict(name, value, context)
                break
        index += 1
    if index >= len(args):
        if name in STDIN_READERS:
            return deny(Rule.STDIN_PROGRAM, f"{name} without a script reads its program from stdin (the MCP messages)")
        return confirm(Rule.SCRIPT, f"{name} without a script")
    return script_verdict(name, args[index], context)
