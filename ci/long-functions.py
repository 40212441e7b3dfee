#!/usr/bin/env python3
"""Functions longer than 100 lines outside tests.

A function's length is counted from its `fn` line to its closing brace, after blanking comments,
strings (raw strings too) and character literals, so braces inside them do not count. Test code
is left out: files named `tests.rs`, files under `tests/`, and everything after a
`#[cfg(test)] mod` in a file.

Usage: python3 ci/long-functions.py [-n LIMIT] [PATH ...]   (default: crates/*/src, bench,
examples; limit 100). Prints `LINES FILE:LINE NAME`, longest first; exits 1 when any is found.
"""
import glob, re, sys

args = sys.argv[1:]
LIMIT = 100
if len(args) >= 2 and args[0] == '-n':
    LIMIT = int(args[1])
    args = args[2:]
def blank(src):
    # replace comments, strings, chars with spaces (keep newlines)
    out=[];i=0;n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j==-1 else j
            out.append(' '*(j-i)); i=j; continue
        if src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j==-1 else j+2
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j; continue
        m=re.match(r'b?r(#*)"',src[i:i+10])
        if m and (i==0 or not (src[i-1].isalnum() or src[i-1]=='_')):
            hashes=m.group(1); start=i+len(m.group(0))
            j=src.find('"'+hashes,start); j=n if j==-1 else j+1+len(hashes)
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j; continue
        if c=='"':
            j=i+1
            while j<n and src[j]!='"':
                j+= 2 if src[j]=='\\' else 1
            j+=1
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j; continue
        if c=="'":
            m=re.match(r"'(\\.[^']*|[^'\\])'",src[i:i+12])
            if m:
                out.append(' '*len(m.group(0))); i+=len(m.group(0)); continue
        out.append(c); i+=1
    return ''.join(out)
res=[]
roots = args or ['crates/*/src', 'bench', 'examples']
files = sorted({f for root in roots for f in glob.glob(root + '/**/*.rs', recursive=True)})
for f in files:
    if f.endswith('tests.rs') or '/tests/' in f: continue
    src=blank(open(f).read())
    lines=src.split('\n')
    test_line=None
    for k,l in enumerate(lines):
        if re.match(r'\s*#\[cfg\(test\)\]',l):
            for q in range(k+1,min(k+4,len(lines))):
                if re.match(r'\s*(pub(\([^)]*\))? )?mod \w+',lines[q]): test_line=q; break
            if test_line: break
    for m in re.finditer(r'\bfn\s+(\w+)',src):
        ln=src.count('\n',0,m.start())
        if test_line is not None and ln>test_line: continue
        # find first { or ; after
        k=m.end(); depth=0
        # skip generics/params: find first '{' at paren depth 0 or ';'
        par=0
        while k<len(src):
            ch=src[k]
            if ch in '([': par+=1
            elif ch in ')]': par-=1
            elif ch==';' and par==0: k=-1; break
            elif ch=='{' and par==0: break
            k+=1
        if k<0 or k>=len(src): continue
        d=0; e=k
        while e<len(src):
            if src[e]=='{': d+=1
            elif src[e]=='}':
                d-=1
                if d==0: break
            e+=1
        n=src.count('\n',m.start(),e)+1
        if n>LIMIT: res.append((n,f,ln+1,m.group(1)))
for n, f, line, name in sorted(res, reverse=True):
    print(f'{n} {f}:{line} {name}')
sys.exit(1 if res else 0)
