# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the packaging tests (sourced): results, and the options a command's
# --help lists.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

# The options of `$bin $1 --help` ($1 empty: the desktop app), one name a
# line, sorted. QCommandLineParser's layout: an "Options:" block, each option
# "  -a, --name <VALUE>  description", descriptions wrapped and indented.
help_options() {
  "$bin" $1 --help 2>/dev/null | awk '
    /^Options:$/ { inside = 1; next }
    /^[^ ]/ || /^$/ { inside = 0 }
    inside && /^  -/ {
      spec = substr($0, 3); cut = index(spec, "  ")
      if (cut) spec = substr(spec, 1, cut - 1)
      sub(/ <[^>]*>$/, "", spec)
      n = split(spec, names, /, /)
      for (i = 1; i <= n; i++) print names[i]
    }' | sort
}

# The subcommands the binary itself names (its usage error lists them).
binary_commands() {
  python3 "$src/packaging/generate.py" commands --binary "$bin"
}

# The aliases `$bin --help` names, "ALIAS COMMAND" a line, sorted: its
# Commands block says "  attach   ...; also: a, at".
binary_aliases() {
  "$bin" --help 2>/dev/null | awk '
    /^Commands/ { inside = 1; next }
    /^$/ { inside = 0 }
    inside && /; also: / {
      cmd = $1; sub(/.*; also: /, "")
      n = split($0, aliases, /, /)
      for (i = 1; i <= n; i++) print aliases[i], cmd
    }' | sort
}
