#!/usr/bin/env python3
"""Reference ids -> a .tok.zst stream (docs/driver.md's format), for tests/fixtures/tokenizers/.

    python3 scripts/tokenizer_ref_stream.py IDS TOKENIZER_JSON OUT.tok.zst

IDS: a 1-D int32 .npy (scripts/make_tokenizer_refs.py) or raw int32 little-endian ids
(scripts/make_tokenizer_variants.js). The header's tokenizer id is the one `replayssm tokens`
gives that tokenizer.json ("hfbpe-fnv1a64:" + FNV-1a 64 of the file), vocab its largest id + 1.
Standard library only, plus the zstd command (which records the content size the reader checks).
"""
import struct, subprocess, sys, zlib, os, tempfile
def fnv(b):
    h=0xcbf29ce484222325
    for x in b: h=((h^x)*0x100000001b3)&0xffffffffffffffff
    return h
src, tokjson, out = sys.argv[1:4]
b=open(src,'rb').read()
if b[:6]==b'\x93NUMPY':
    hl=struct.unpack('<H',b[8:10])[0]; assert b"'<i4'" in b[10:10+hl]; b=b[10+hl:]
ids=struct.unpack('<%di'%(len(b)//4), b)
import json
j=json.load(open(tokjson,encoding='utf-8'))
vocab=max(list(j['model']['vocab'].values())+[a['id'] for a in j['added_tokens']])+1
assert max(ids)<vocab and min(ids)>=0
payload=struct.pack('<%dI'%len(ids),*ids)
tid=('hfbpe-fnv1a64:%016x'%fnv(open(tokjson,'rb').read())).encode()
h=b'RSSMTOK\0'+struct.pack('<II',1,vocab)+tid.ljust(32,b'\0')+struct.pack('<qI',len(ids),zlib.crc32(payload))
h+=struct.pack('<I',zlib.crc32(h))
with tempfile.NamedTemporaryFile(delete=False) as t: t.write(payload)
z=subprocess.run(['zstd','-19','-q','-c',t.name],capture_output=True,check=True).stdout
os.unlink(t.name)
open(out,'wb').write(h+z)
