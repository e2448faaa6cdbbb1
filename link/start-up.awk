# Start-up order, the names side: what the linker wrapper (start-up-first) and the list's
# script (make-start-up-keys.sh) compute from symbol names. Written in awk (POSIX, and mawk)
# because it runs in the link, where only what the C toolchain brings can be counted on.
#
# mode=keys:  mangled names in (one per line), their keys out, each once, in first-seen order.
# mode=order: `nm` output in, `keys=FILE` the list; out, the program's functions whose key is
#             in the list, in the list's order (every function of a key together): the file
#             lld's --symbol-ordering-file reads. Nothing when the program has no v0 names.
# mode=faults: `perf script -F pid,addr,ip,sym,dso --no-demangle` lines of page faults in,
#             `program=(PATH)` the program as perf names its dso; out, the function of each
#             fault on the program's code (page-fault-keys.sh).

# The key of a symbol name: the same function in every build of the same source, whatever the
# profile, the features or the compiler. A v0-mangled name (rustc -C symbol-mangling-version=v0)
# spells out the function and its instantiation; only the crates' hashes (`Cs<hash>_`), the
# back-references into the name (`B<offset>_`, whose offsets move with the hashes' lengths) and
# the suffixes LLVM gives a local or cloned copy (`.llvm.<number>`, `.constprop.0`, `.cold`:
# everything from the first dot, which a mangled name never has) change between builds, so
# those are blanked. A back-reference's offset is at most three base-62 digits (names are shorter than
# 238,328 characters), which keeps the pattern from running on through an identifier that
# begins with a `B` (`8BashToolNtB4_`); where it still matches inside one, two keys become
# equal and both functions are placed first, nothing worse.
function symbol_key(name) {
    sub(/\..*$/, "", name)
    gsub(/Cs[0-9A-Za-z]+_/, "Cs_", name)
    gsub(/B[0-9A-Za-z]?[0-9A-Za-z]?[0-9A-Za-z]?_/, "B_", name)
    return name
}

BEGIN {
    if (mode == "order") {
        ranks = 0
        while ((getline line < keys) > 0) {
            if (line == "" || line ~ /^#/ || line in rank) continue
            rank[line] = ++ranks
        }
        close(keys)
    }
}

mode == "keys" {
    key = symbol_key($0)
    if (key != "" && !(key in seen)) { seen[key] = 1; print key }
    next
}

# A line is: pid, the faulting address, its symbol and (dso), the instruction's address, its
# symbol and (dso). Code being read in: the fault is at the instruction, or on the page after
# it with the same symbol (an instruction across a page boundary). Any process of the program
# (the fork server and the supervisors are forks of it).
mode == "faults" {
    if (NF == 7 && $NF == program && $(NF - 1) != "[unknown]" &&
        ($2 == $(NF - 2) || ($4 == program && $3 == $(NF - 1))))
        print $(NF - 1)
    next
}

# nm: address, type, name. Only code (t, T; W and w for weak definitions).
mode == "order" && NF == 3 && $2 ~ /^[tTwW]$/ {
    if ($3 ~ /^_R/) v0 = 1
    key = symbol_key($3)
    if (key in rank) {
        r = rank[key]
        if (r in names) names[r] = names[r] "\n" $3
        else names[r] = $3
    }
}

# A program without v0 names (built with a RUSTFLAGS of the user's) is left in its usual
# order, even where a few C functions would match.
END {
    if (mode == "order" && v0)
        for (r = 1; r <= ranks; r++)
            if (r in names) print names[r]
}
