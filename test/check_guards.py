#!/usr/bin/env python3
"""Guard bodies hold PostgreSQL calls only: a PostgreSQL error longjmps out
of a pg::guard lambda, skipping the destructors of anything C++ made in it.
This scan reads every guard([...] { ... }) body in src/ and reports C++
that makes or grows objects there: std:: and fmt:: calls, string
temporaries, container growth. Exit 1 if any."""
import glob, re, sys, os

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')
# What a guard body must not do. Each is a C++ construction or growth.
FORBIDDEN = [
    (r'\bstd::(?!numeric_limits|is_void_v)', 'a std:: call or type'),
    (r'\bfmt::', 'fmt:: formatting'),
    (r'\.(push_back|emplace_back|emplace|insert|append|assign|resize|reserve)\(', 'container growth'),
    (r'\btext_of\(', 'a std::string temporary (text_of)'),
    (r'\bpg::quoted\(', 'a std::string temporary (pg::quoted)'),
    (r'\bthrow\b', 'a C++ throw'),
]
bad = 0
for path in sorted(glob.glob(os.path.join(root, '*', '*.[ch]pp')) + glob.glob(os.path.join(root, '*.[ch]pp'))):
    text = open(path).read()
    rel = os.path.relpath(path, os.path.join(root, '..'))
    if rel == 'src/pg/boundary.hpp':
        continue  # guard() itself
    # guard() itself, guarded_text(), and entries::locked(), whose body runs
    # inside a guard with the databases' lock held.
    for m in re.finditer(r'\b(guard|guarded_text|locked)\(\s*(LW_[A-Z]+\s*,\s*)?\[[^\]]*\]\s*(\([^)]*\))?\s*(->[^{]*)?\{', text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            c = text[i]
            if c == '{': depth += 1
            elif c == '}': depth -= 1
            elif c == '"':  # skip string literals
                i += 1
                while text[i] != '"':
                    i += 2 if text[i] == '\\' else 1
            i += 1
        body = text[m.end():i - 1]
        if 'guard-ok:' in body:
            continue  # a body that breaks the rule on purpose says why
        code = re.sub(r'"(\\.|[^"\\])*"', '""', re.sub(r'//[^\n]*', '', body))
        for pattern, what in FORBIDDEN:
            if re.search(pattern, code):
                line = text.count('\n', 0, m.start()) + 1
                print(f'{rel}:{line}: guard body holds {what}')
                bad = 1
# Log lines go through pg::report: an ereport below ERROR anywhere else is
# a line built by hand.
for path in sorted(glob.glob(os.path.join(root, '*', '*.[ch]pp')) + glob.glob(os.path.join(root, '*.[ch]pp'))):
    rel = os.path.relpath(path, os.path.join(root, '..'))
    if rel == 'src/pg/report.cpp':
        continue
    for n, line in enumerate(open(path), 1):
        if re.search(r'\bereport\(\s*(?!ERROR\b)', line):
            print(f'{rel}:{n}: a log line by hand: use pg::report')
            bad = 1
if not bad:
    print('ok - every guard body holds PostgreSQL calls only, and every log line goes through pg::report')
sys.exit(bad)
