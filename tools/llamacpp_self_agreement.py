#!/usr/bin/env python3
"""How well does llama.cpp agree with itself? Runs every prompt of
tests/fixtures/smollm2_reference.json through llama-cpp-python one token at a
time (n_ubatch=1, the decode path) and compares with the fixture's logits,
which came from one batched forward (n_ubatch=512). Both are llama.cpp on the
same file; they differ only in which kernels and activation roundings the
batch shape selects. This is the noise floor for any comparison with llama.cpp.

Usage: python3 tools/llamacpp_self_agreement.py   (needs llama-cpp-python; ~1 min)
"""
import json
import os

import llama_cpp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
d=json.load(open(ROOT + '/tests/fixtures/smollm2_reference.json'))
llm=llama_cpp.Llama(model_path=ROOT + '/models/SmolLM2-135M-Instruct.Q4_1.gguf', n_ctx=1024, n_batch=1, n_ubatch=1, logits_all=True, n_threads=1, verbose=False)
agree=tot=0; diffs=[]
for p in d['prompts']:
    llm.reset(); llm.eval(p['tokens'])
    sc=np.array(llm.scores[:len(p['tokens'])])
    for i in range(len(p['tokens'])):
        ids=p['top_ids'][i]; ref=np.array(p['top_logits'][i])
        m=sc[i].max(); lse=m+np.log(np.exp(sc[i]-m).sum())
        diffs.append(np.abs((sc[i][ids]-lse)-(ref-p['lse'][i])).mean())
        agree+= int(np.argmax(sc[i]))==ids[0]; tot+=1
print('llama.cpp ubatch=1 vs ubatch=512: top1 agreement', agree/tot, 'mean |dlogprob|', np.mean(diffs), 'positions', tot)
