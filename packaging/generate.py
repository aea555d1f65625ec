#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Generates the package's files that must follow another source.

  man         tether.1 from the built binary's --help texts (every command)
              and the prose of packaging/tether.1.in, so the options in the
              manual page are the ones --help prints and cannot drift.
  metainfo    the AppStream metainfo with its <releases> from CHANGELOG.md.
  changelog   the Debian changelog (changelog.gz) from CHANGELOG.md.
  commands    the subcommand list the binary names in its usage error.

CHANGELOG.md (Keep a Changelog) is the one release history: a version given
with --version that has no "## [X.Y.Z] - YYYY-MM-DD" heading there is an
error, so project(VERSION) cannot move without a changelog entry.
"""

import argparse
import gzip
import html
import os
import re
import subprocess
import sys
import tempfile

# The commands of `tether` as the manual page presents them, the desktop
# application ("") first. The test packaging/tst_manpage holds this list to
# the one the binary itself names (`tether nosuchcommand`).
COMMANDS = ["", "serve", "list", "new", "attach", "kill", "rename", "revive", "share", "key", "restart", "wait", "send"]


def fail(message):
    sys.exit("generate.py: " + message)


# --- CHANGELOG.md -------------------------------------------------------------

def read_changelog(path):
    """[(version, date, [(section, [item, ...]), ...]), ...], newest first.
    Unreleased is left out: it is not a release."""
    releases = []
    item = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", line)
            if m:
                item = None
                if m.group(1).lower() == "unreleased":
                    releases.append(None)
                    continue
                if not m.group(2):
                    fail(f"{path}: release {m.group(1)} has no date (## [X.Y.Z] - YYYY-MM-DD)")
                releases.append((m.group(1), m.group(2), []))
                continue
            if not releases or releases[-1] is None:
                continue
            sections = releases[-1][2]
            m = re.match(r"^### (.+)$", line)
            if m:
                sections.append((m.group(1).strip(), []))
                item = None
                continue
            m = re.match(r"^[-*] (.+)$", line)
            if m:
                if not sections:
                    sections.append(("Changed", []))
                sections[-1][1].append(m.group(1).strip())
                item = sections[-1][1]
                continue
            if item is not None and line.startswith("  ") and line.strip():
                item[-1] += " " + line.strip()
    return [r for r in releases if r is not None]


def plain(markdown):
    """Inline Markdown as plain text: `code` and [text](url) lose their marks."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown)
    return text.replace("`", "")


def release_of(releases, version, changelog):
    for r in releases:
        if r[0] == version:
            return r
    fail(f"version {version} (project() in CMakeLists.txt) has no entry in {changelog}; "
         f"add '## [{version}] - YYYY-MM-DD' with its changes")


# --- metainfo -----------------------------------------------------------------

def metainfo(args):
    releases = read_changelog(args.changelog)
    release_of(releases, args.version, args.changelog)
    out = []
    for version, date, sections in releases:
        out.append(f'    <release version="{version}" date="{date}">')
        out.append("      <description>")
        for section, items in sections:
            out.append(f"        <p>{html.escape(section)}:</p>")
            out.append("        <ul>")
            for i in items:
                out.append(f"          <li>{html.escape(plain(i))}</li>")
            out.append("        </ul>")
        out.append("      </description>")
        out.append("    </release>")
    text = substitute(read(args.template), args.define)
    text = text.replace("@RELEASES@", "\n".join(out))
    write_if_changed(args.out, text)


# --- Debian changelog ----------------------------------------------------------

def changelog(args):
    import email.utils
    import datetime
    releases = read_changelog(args.changelog)
    release_of(releases, args.version, args.changelog)
    entries = []
    for version, date, sections in releases:
        day = datetime.datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
        lines = [f"{args.package} ({version}) unstable; urgency=medium", ""]
        for section, items in sections:
            for i in items:
                lines.append(wrap(f"{section}: {plain(i)}", "  * ", "    "))
        lines += ["", f" -- {args.maintainer}  {email.utils.format_datetime(day)}", ""]
        entries.append("\n".join(lines))
    data = "\n".join(entries).encode("utf-8")
    # gzip -9n: no name and no timestamp in the header (reproducible; lintian
    # package-contains-timestamped-gzip).
    with open(args.out, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as z:
            z.write(data)


def wrap(text, first, rest, width=79):
    words = text.split()
    lines, line = [], first
    for w in words:
        if len(line) + len(w) > width and line.strip():
            lines.append(line.rstrip())
            line = rest
        line += w + " "
    lines.append(line.rstrip())
    return "\n".join(lines)


# --- the manual page -----------------------------------------------------------

def help_env(home):
    """A clean environment in the empty directory `home`: built-in defaults
    in the help texts (they name the values in effect, which a settings file
    would change), no display, a UTF-8 C locale."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, "config"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def run_help(binary, command, env):
    argv = [binary] + ([command] if command else []) + ["--help"]
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    if p.returncode != 0 or not p.stdout.startswith("Usage: "):
        fail(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def parse_help(text, command):
    """(usage, [paragraph lines...], [(names, value, description)], [(name, description)])
    from QCommandLineParser's help text."""
    lines = text.split("\n")
    words = lines[0][len("Usage: "):].split(" ")
    # The first word is the program ("tether"; tests assert that the desktop
    # app does not print argv[0] there).
    words = words[2:] if command and words[1:2] == [command] else words[1:]
    usage = " ".join([("tether " + command).strip()] + words)
    desc, options, arguments = [], [], []
    block = desc
    for line in lines[1:]:
        if line == "Options:":
            block = options
            continue
        if line == "Arguments:":
            block = arguments
            continue
        if block is desc:
            desc.append(line)
            continue
        m = re.match(r"^  (\S.*?)(?:\s{2,}(\S.*))?$", line)
        if m and not line.startswith("   "):
            block.append([m.group(1), m.group(2) or ""])
        elif line.strip() and block:
            block[-1][1] = (block[-1][1] + " " + line.strip()).strip()
    opts = []
    for spec, text in options:
        value = None
        m = re.match(r"^(.*?) <([^>]+)>$", spec)
        if m:
            spec, value = m.group(1), m.group(2)
        opts.append(([n.strip() for n in spec.split(",")], value, text))
    while desc and not desc[-1].strip():
        desc.pop()
    return usage, desc, opts, [tuple(a) for a in arguments]


def roff(text):
    """Text escaped for roff: backslashes, minus signs, a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def roff_usage(usage, command):
    words = ("tether " + command).strip()
    rest = usage[len(words):].strip()
    return f"\\fB{roff(words)}\\fR" + (f" {roff(rest)}" if rest else "")


def roff_paragraphs(lines):
    out, para, pre = [], [], []

    def flush():
        if para:
            out.append(".PP")
            out.extend(roff(l) for l in para)
            para.clear()
        if pre:
            out.append(".PP")
            out.append(".RS 4")
            out.append(".nf")
            out.extend(roff(l.strip()) for l in pre)
            out.append(".fi")
            out.append(".RE")
            pre.clear()

    for line in lines:
        if not line.strip():
            flush()
        elif line.startswith("  "):
            if para:
                flush()
            pre.append(line)
        else:
            if pre:
                flush()
            para.append(line.strip())
    flush()
    return out


def man(args):
    releases = read_changelog(args.changelog)
    _, date, _ = release_of(releases, args.version, args.changelog)
    with tempfile.TemporaryDirectory(prefix="tether-man-") as home:
        helps = [(c, run_help(args.binary, c, help_env(home))) for c in COMMANDS]
    synopsis, sections = [], []
    for command, text in helps:
        usage, desc, opts, arguments = parse_help(text, command)
        synopsis.append(roff_usage(usage, command))
        title = f"tether {command}" if command else "tether (the desktop application)"
        sections.append(f".SS {roff(title)}")
        sections.append(roff_usage(usage, command))
        sections.extend(roff_paragraphs(desc))
        if opts:
            sections.append(".PP")
            sections.append("Options:")
            for names, value, text in opts:
                tag = ", ".join(f"\\fB{roff(n)}\\fR" for n in names)
                if value:
                    tag += f" \\fI{roff(value)}\\fR"
                sections += [".TP", tag, roff(text)]
        if arguments:
            sections.append(".PP")
            sections.append("Arguments:")
            for name, text in arguments:
                sections += [".TP", f"\\fI{roff(name)}\\fR", roff(text)]
    text = substitute(read(args.template), args.define)
    text = text.replace("@DATE@", date).replace("@VERSION@", args.version)
    text = text.replace("@SYNOPSIS@", "\n.br\n".join(synopsis))
    text = text.replace("@COMMANDS@", "\n".join(sections))
    write_if_changed(args.out, text)
    if args.gzip:
        with open(args.gzip, "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as z:
                z.write(text.encode("utf-8"))


def commands(args):
    """Prints the subcommands the binary names in its usage error, one a
    line (the tests compare it with COMMANDS and the completions)."""
    with tempfile.TemporaryDirectory(prefix="tether-man-") as home:
        p = subprocess.run([args.binary, "nosuchcommand"], env=help_env(home), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    m = re.search(r"use (.*?)\s*(?:\(|$)", p.stderr, re.M)
    if p.returncode != 2 or not m:
        fail(f"`tether nosuchcommand` exited {p.returncode} without naming the commands: {p.stderr.strip()}")
    print("\n".join(w for w in re.split(r",\s*|\s+or\s+", m.group(1)) if w))


# --- helpers -----------------------------------------------------------------

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def substitute(text, defines):
    for d in defines or []:
        key, _, value = d.partition("=")
        text = text.replace(f"@{key}@", value)
    return text


def write_if_changed(path, text):
    try:
        if read(path) == text:
            return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("man")
    m.add_argument("--binary", required=True)
    m.add_argument("--gzip")
    a = sub.add_parser("metainfo")
    c = sub.add_parser("changelog")
    c.add_argument("--package", required=True)
    c.add_argument("--maintainer", required=True)
    for s in (m, a, c):
        s.add_argument("--changelog", required=True)
        s.add_argument("--version", required=True)
        s.add_argument("--out", required=True)
    for s in (m, a):
        s.add_argument("--template", required=True)
        s.add_argument("--define", action="append", help="KEY=VALUE: @KEY@ in the template becomes VALUE")
    k = sub.add_parser("commands")
    k.add_argument("--binary", required=True)
    args = p.parse_args()
    {"man": man, "metainfo": metainfo, "changelog": changelog, "commands": commands}[args.what](args)


if __name__ == "__main__":
    main()
