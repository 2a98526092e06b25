#!/usr/bin/env python3
"""Random texts for the differential check (run.sh): python3 gen_texts.py SEED COUNT OUT.bin.

Each text joins 1..60 pieces drawn from a palette of what tokenizers treat specially (cases,
contractions, digits of several scripts, CRLF and every kind of Unicode space, NFC-changing
sequences, CJK, emoji, added and special tokens and fragments of them, NUL); OUT.bin holds them
as (uint32 little-endian length, UTF-8 bytes) records."""
import random
import struct
import sys

random.seed(int(sys.argv[1]))
pal = ["a","e","T","the"," ","  ","\n","\r\n","\t","'s","'S","'ll","'D","’","1","23","4567","½","Ⅷ","٣",
 ",",".","!?","...","--","—","/","//","$","€","(",")","\"","“","”","é","e\u0301","A\u030a","\u2126","\u212b",
 "\u1e9b\u0323","日本","か\u3099","가","\u1100\u1161","👍🏽","👨\u200d👩","\u00a0","\u2009","\u3000","\u0085","\u200b",
 "\x0b","\x0c","\u2028","<|endoftext|>","<|im_start|>","<think>","<think","<|","|>",">","\u0338","CamelCase","HTTPServer",
 "McDonald'S","x2","'\u017f","'\u212a","'\u0130","ǈ","\x00","ß","İ","ǅ","\U0001F1EB\U0001F1F7","\u0915\u094d\u0937","\u0300\u0301"]
out = open(sys.argv[3], 'wb')
for i in range(int(sys.argv[2])):
    s = ''.join(random.choice(pal) for _ in range(random.randint(1, 60)))
    b = s.encode('utf-8'); out.write(struct.pack('<I', len(b)) + b)
