"""The mutants of a C source of bpf/cc, for tools/mutants/cc_mutants.py: a small lexer (enough
to tell code from comments, strings and preprocessor lines), the regions where mutants
may go (function bodies, the bodies of function-like macros that hold a block, and
object-like integer #defines) and the mutation operators (see cc_mutants.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------
# a small C lexer: enough to tell code from comments, strings and preprocessor lines

PUNCT = sorted("""<<= >>= ... -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^=
{ } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = . #""".split(), key=len, reverse=True)
TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "__u8", "__u16", "__u32",
         "__u64", "__s32", "__s64", "int", "bool", "char", "void", "long", "short",
         "unsigned", "signed", "const", "volatile", "static", "struct", "enum", "union"}
KEYWORDS = {"if", "else", "for", "while", "do", "return", "break", "continue", "goto",
            "switch", "case", "default", "sizeof"} | TYPES
TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*)
  | (?P<ident>[A-Za-z_]\w*)
""", re.S | re.X)


@dataclass
class Tok:
    kind: str      # ident, num, punct, pp (a whole preprocessor line), str
    text: str
    start: int
    end: int


def lex(src: str, base: int = 0, pp: bool = True) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if pp and c == "#" and line_start:
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            toks.append(Tok("pp", src[i:k], base + i, base + k))
            i = k
            continue
        if c == "\\" and i + 1 < n and src[i + 1] == "\n":     # a macro body's line break
            i += 2
            continue
        m = TOKEN_RE.match(src, i)
        if m:
            kind = m.lastgroup
            if kind == "ws":
                if "\n" in m.group():
                    line_start = True
            elif kind != "comment":
                toks.append(Tok(kind, m.group(), base + i, base + m.end()))
                line_start = False
            i = m.end()
            continue
        for p in PUNCT:
            if src.startswith(p, i):
                toks.append(Tok("punct", p, base + i, base + i + len(p)))
                i += len(p)
                line_start = False
                break
        else:
            raise ValueError(f"cannot lex {src[i:i + 20]!r}")
    return toks


# ---------------------------------------------------------------------------------------
# where mutants may go


def code_regions(src: str) -> tuple[list[tuple[str, list[Tok]]], list[Tok]]:
    """(function name, body tokens) for every function body and every function-like
    macro whose body holds a block; and the object-like integer #defines."""
    toks = lex(src)
    regions, defines = [], []
    depth = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "pp":
            m = re.match(r"#\s*define\s+(\w+)(\(([^)]*)\))?", t.text)
            if m and m.group(2) is None:
                val = lex(t.text[m.end():], t.start + m.end(), pp=False)   # comments dropped
                if len(val) == 1 and val[0].kind == "num":
                    defines.append(val[0])
            elif m and "{" in t.text[m.end():]:
                body = lex(t.text[m.end():], t.start + m.end(), pp=False)
                regions.append((m.group(1), body))
            i += 1
            continue
        if t.text == "{":
            if depth == 0 and i > 0 and toks[i - 1].text == ")":
                # a function definition: the name is the identifier before its '(' (or
                # BPF_PROG's first argument)
                j, d = i - 1, 0
                while j >= 0:
                    if toks[j].text == ")":
                        d += 1
                    elif toks[j].text == "(":
                        d -= 1
                        if d == 0:
                            break
                    j -= 1
                name = toks[j - 1].text
                if name == "BPF_PROG":
                    name = toks[j + 1].text
                k, d = i, 0
                while k < len(toks):
                    if toks[k].text == "{":
                        d += 1
                    elif toks[k].text == "}":
                        d -= 1
                        if d == 0:
                            break
                    k += 1
                regions.append((name, toks[i + 1:k]))
                i = k + 1
                continue
            depth += 1
        elif t.text == "}":
            depth -= 1
        i += 1
    return regions, defines


@dataclass
class Mutant:
    id: int
    file: str
    line: int
    func: str
    op: str
    start: int
    end: int
    repl: str
    orig: str

    def describe(self) -> str:
        return f"{self.file}:{self.line} {self.func}: {self.op}: `{self.orig}` -> `{self.repl}`"


REL = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="], ">=": [">", "<"],
       "==": ["!="], "!=": ["=="]}
ARITH = {"+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "%": ["/"]}
ASSIGN = {"+=": ["-="], "-=": ["+="], "*=": ["/="], "/=": ["*="], "|=": ["&="],
          "&=": ["|="], "<<=": [">>="], ">>=": ["<<="], "++": ["--"], "--": ["++"]}
SHIFT = {"<<": [">>"], ">>": ["<<"]}
LOGIC = {"&&": ["||"], "||": ["&&"]}
BIT = {"&": ["|"], "|": ["&"]}


def _is_value_end(t: Tok | None) -> bool:
    """Could `t` end an operand (so that the operator after it is binary)?"""
    if t is None:
        return False
    if t.kind == "num":
        return True
    if t.kind == "ident":
        return t.text not in KEYWORDS
    return t.text in (")", "]", "++", "--")


def _int_variants(text: str) -> list[str]:
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)", text)
    digits, suffix = m.group(1), m.group(2)
    v = int(digits, 0)
    hexa = digits[:2].lower() == "0x"
    fmt = (lambda x: hex(x)) if hexa else str
    out = []
    for w in (0, v + 1, v - 1):
        if w != v and w >= 0 and fmt(w) + suffix not in out:
            out.append(fmt(w) + suffix)
    return out


def mutants_of(src: str, fname: str, every: str) -> list[Mutant]:
    """The mutants of `src`; `every` is the text of all sources (an integer #define that
    none of them uses has only equivalent mutants and is skipped)."""
    regions, defines = code_regions(src)
    line_of = lambda pos: src.count("\n", 0, pos) + 1   # noqa: E731
    found: list[tuple] = []

    def add(func, op, t_start, t_end, repl):
        found.append((t_start, t_end, repl, func, op))

    for d in defines:
        name = re.match(r"\s*#\s*define\s+(\w+)", src[src.rfind("\n", 0, d.start) + 1:d.start]).group(1)
        if len(re.findall(rf"\b{name}\b", every)) < 2:
            continue
        for v in _int_variants(d.text):
            add("#define", "constant", d.start, d.end, v)

    for func, body in regions:
        # statement starts: at paren depth 0, after ; { } else, or the ) of a control header
        paren: list[bool] = []          # for each open '(': is it a control header's?
        stmt_start = True
        i = 0
        while i < len(body):
            t = body[i]
            prev = body[i - 1] if i else None
            nxt = body[i + 1] if i + 1 < len(body) else None
            tx = t.text
            # deleted statements and return values
            if stmt_start and not paren and t.kind == "ident":
                j, d = i, 0
                while j < len(body) and not (body[j].text == ";" and d == 0):
                    if body[j].text in "([{":
                        d += 1
                    elif body[j].text in ")]}":
                        d -= 1
                    if d < 0:
                        break
                    j += 1
                if j < len(body) and body[j].text == ";":
                    if tx == "return":
                        expr = src[body[i + 1].start:body[j].start].strip() if j > i + 1 else ""
                        if not expr:
                            add(func, "deleted return", t.start, body[j].end, ";")
                        else:
                            for v in ("0", "1"):
                                if expr != v:
                                    add(func, "return value", body[i + 1].start, body[j].start, v)
                    elif tx not in KEYWORDS and not (nxt and nxt.kind == "ident" and tx not in KEYWORDS
                                                     and (nxt.text not in KEYWORDS)):
                        # an expression statement (not a declaration `type name ...`); not
                        # `x = 0;` in an init op, which is equivalent: the kernel zeroes
                        # icsk_ca_priv before init (tcp_assign_congestion_control,
                        # tcp_reinit_congestion_control, tcp_disconnect), as the harness does
                        stmt = src[t.start:body[j].end]
                        if not (func.endswith("_init") and re.fullmatch(r"[\w>.\[\]\s-]+=\s*0\s*;", stmt)):
                            add(func, "deleted statement", t.start, body[j].end, ";")
            stmt_start = False
            if tx == "(":
                paren.append(prev is not None and prev.text in ("if", "while", "for", "switch"))
            elif tx == ")":
                ctl = paren.pop() if paren else False
                if ctl and not paren:
                    stmt_start = True
            elif tx in (";", "{", "}") and not paren:
                stmt_start = True
            elif tx in ("else", "do"):
                stmt_start = True
            elif tx == ":" and prev is not None and (prev.text == "default" or
                                                    (i >= 2 and body[i - 2].text == "case")):
                stmt_start = True
            # operators
            binary = _is_value_end(prev)
            if t.kind == "num":
                # not an array subscript (which element, not what the rule computes)
                if not (prev is not None and prev.text == "[" and nxt is not None and nxt.text == "]"):
                    for v in _int_variants(tx):
                        add(func, "constant", t.start, t.end, v)
            elif tx in REL and binary:
                for v in REL[tx]:
                    add(func, "relational", t.start, t.end, v)
            elif tx in ARITH and binary:
                if tx == "*" and prev.kind == "ident" and (prev.text in TYPES or
                                                           (i >= 2 and body[i - 2].text in ("struct", "enum", "union"))):
                    pass                                          # a pointer declaration
                else:
                    for v in ARITH[tx]:
                        add(func, "arithmetic", t.start, t.end, v)
            elif tx in ASSIGN:
                for v in ASSIGN[tx]:
                    add(func, "assignment", t.start, t.end, v)
            elif tx in SHIFT and binary:
                for v in SHIFT[tx]:
                    add(func, "shift", t.start, t.end, v)
            elif tx in LOGIC:
                for v in LOGIC[tx]:
                    add(func, "logical", t.start, t.end, v)
            elif tx in BIT and binary:
                for v in BIT[tx]:
                    add(func, "bitwise", t.start, t.end, v)
            elif tx == "!":
                add(func, "negation removed", t.start, t.end, "")
            i += 1

    out, seen = [], set()
    for s, e, repl, func, op in sorted(found, key=lambda x: (x[0], x[1], x[2])):
        key = (s, e, repl)
        if key in seen:
            continue
        seen.add(key)
        out.append(Mutant(len(out), fname, line_of(s), func, op, s, e, repl, src[s:e]))
    return out


def apply(src: str, m: Mutant) -> str:
    return src[:m.start] + m.repl + src[m.end:]
