"""Shells: refused when they run inline code or read their program from stdin; a script waits for a person.

POSIX shells (`-c`, `-s`, `-i`, clusters such as `-lc`), fish and nushell spellings, `cmd /c`
(and `cmd` alone, which reads stdin), PowerShell's parameter prefixes and dash look-alikes.
"""

from __future__ import annotations

from mcpstation.policy._context import Context, script_verdict
from mcpstation.policy._verdicts import CommandVerdict, Rule, deny

POWERSHELL_VALUE_PARAMETERS = ("executionpolicy", "ep", "configurationname", "workingdirectory", "wd", "settingsfile",
                               "windowstyle", "inputformat", "outputformat", "version", "custompipename")  # fmt: skip


def shell_verdict(name: str, args: list[str], context: Context) -> CommandVerdict:
    if name == "cmd":
        for arg in args:
            if arg.lower().startswith(("/c", "/k", "/r")):
                return deny(Rule.INLINE_CODE, f"cmd {arg} runs an inline command line")
        return deny(Rule.STDIN_PROGRAM, "cmd without /c reads its commands from stdin (the MCP messages)")
    if name in {"powershell", "pwsh", "powershell_ise"}:
        return powershell_verdict(name, args, context)
    if name in {"wsl", "git-bash"}:
        return deny(Rule.INLINE_CODE, f"{name} runs its arguments as a command line in another shell")
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, f"{name} - reads its program from stdin (the MCP messages)")
        if arg == "--":
            index += 1
            break
        if not arg.startswith(("-", "+")):
            break
        head = arg.partition("=")[0].lower()
        if head in {"--command", "--commands", "--init-file", "--rcfile", "--init-command", "-C"} or head == "-c":
            return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline shell code")
        single = arg.startswith("-") and not arg.startswith("--")
        if single and "c" in arg[1:]:
            return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline shell code")
        if single and "s" in arg[1:]:
            return deny(Rule.STDIN_PROGRAM, f"{name} {arg} reads its program from stdin (the MCP messages)")
        if (single and "i" in arg[1:]) or head == "--interactive":
            return deny(Rule.STDIN_PROGRAM, f"{name} {arg} is an interactive shell fed the MCP messages")
        if arg in {"-o", "+o", "-O", "+O"}:
            index += 1
        index += 1
    if index >= len(args):
        return deny(Rule.STDIN_PROGRAM, f"{name} without a script would run the MCP messages on stdin as commands")
    return script_verdict(name, args[index], context)


def powershell_verdict(name: str, args: list[str], context: Context) -> CommandVerdict:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return deny(Rule.STDIN_PROGRAM, f"{name} - reads its commands from stdin (the MCP messages)")
        if not arg.startswith(("-", "/", "\u2013", "\u2014", "\u2015")):
            if name == "pwsh":
                return script_verdict(name, arg, context)
            return deny(Rule.INLINE_CODE, f"{name} runs the bare argument {arg!r} as a command line")
        parameter = arg.lstrip("-/\u2013\u2014\u2015").lower().partition(":")[0]
        if parameter and (
            "command".startswith(parameter)
            or "commandwithargs".startswith(parameter)
            or "encodedcommand".startswith(parameter)
            or parameter in {"cwa", "ec", "enc"}
        ):
            return deny(Rule.INLINE_CODE, f"{name} {arg} runs inline code")
        if parameter in {"noexit", "interactive"}:
            return deny(Rule.STDIN_PROGRAM, f"{name} {arg} keeps reading commands from stdin (the MCP messages)")
        if parameter and "file".startswith(parameter):
            script = args[index + 1] if index + 1 < len(args) else "-"
            if script == "-":
                return deny(Rule.STDIN_PROGRAM, f"{name} {arg} - reads its script from stdin")
            return script_verdict(name, script, context)
        if len(parameter) >= 2 and any(full.startswith(parameter) for full in POWERSHELL_VALUE_PARAMETERS):
            index += 1
        index += 1
    return deny(Rule.STDIN_PROGRAM, f"{name} without -File reads its commands from stdin (the MCP messages)")
