"""The rule of src/ssm_cuda/cuda_pdl.h on the sources: every kernel that pdl_launch launches
begins with pdl_enter(), or (a kernel named in WEIGHTS_BEFORE_WAIT: it loads weights before it
waits) begins with pdl_trigger() and calls pdl_wait().

A kernel launched with Programmatic Dependent Launch starts while the previous kernel still runs;
only its pdl_enter() (cudaGridDependencySynchronize) makes it wait for that kernel's writes. One
that forgot it would read stale inputs on the GPU, at random, and no CPU test would see it; this
test finds it on any machine. It also refuses a plain <<<...>>> launch of such a kernel elsewhere
(harmless, but then the A/B switch RSSM_PDL would not cover every launch), and checks that the
rule is not vacuous: the decode step's kernel files launch through pdl_launch.

Usage: python3 tests/gpu/test_pdl_kernels.py REPO_ROOT
"""
import pathlib
import re
import sys

# the files whose kernels make a decode step (docs/gpu-runtime.md); each must use pdl_launch
STEP_FILES = [
    "src/model_cuda/mc_kernels.cu", "src/model_cuda/mc_fused.cu", "src/model_cuda/mc_metrics.cu",
    "src/model_cuda/mc_step_gemm.cu", "src/model_cuda/attn_lab.cu", "src/model_cuda/attn_lab_v2.cu",
    "src/ssm_cuda/ssm_cuda_plan.cu", "src/ssm_cuda/ssm_cuda_mat.cu",
    "src/ssm_cuda/ssm_cuda_readout.cu", "src/model_cuda/mc_gemm_mma.cu",
    "src/model_cuda/mc_gemm_wide.cu",
]

# kernels allowed to begin with pdl_trigger() and load a model's weights (never written during a
# decode) before their pdl_wait(); each with why (cuda_pdl.h)
WEIGHTS_BEFORE_WAIT = {
    "gemm_mma_kernel": "the first round of W streams while the previous kernel finishes",
    "gemm_wide_kernel": "the first three stages' W stream while the previous kernel finishes",
    "add_rmsnorm_kernel": "the norm's weights (load_norm_w) load while the previous kernel finishes",
    "rmsnorm_gate_kernel": "the norm's weights (load_norm_w) load while the previous kernel finishes",
    "mamba2_gate_norm_kernel": "the group's weights (load_norm_w) load while the previous kernel finishes",
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def matching(text, i, open_ch, close_ch):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_ch:
            depth += 1
        elif text[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced %s at %d" % (open_ch, i))


def launched_names(text):
    """kernel names in pdl_launch(NAME or pdl_launch(NAME<...>"""
    return set(re.findall(r"\bpdl_launch\(\s*([A-Za-z_]\w*)\s*[,<]", text))


def kernel_bodies(text, name):
    """the bodies of every __global__ definition of `name` (templates included)"""
    bodies = []
    for m in re.finditer(r"__global__[^;{}]*?\b%s\s*\(" % re.escape(name), text):
        close = matching(text, m.end() - 1, "(", ")")
        brace = text.find("{", close)
        semi = text.find(";", close)
        if brace < 0 or (0 <= semi < brace):
            continue  # a declaration
        bodies.append(text[brace + 1:matching(text, brace, "{", "}")])
    return bodies


def body_problem(name, body):
    """None if the kernel body keeps the rule, else what is wrong"""
    first = body.lstrip()
    if first.startswith("pdl_enter();"):
        return None
    if name not in WEIGHTS_BEFORE_WAIT:
        return "first statement is not pdl_enter();"
    if not first.startswith("pdl_trigger();"):
        return "first statement is neither pdl_enter(); nor pdl_trigger();"
    if len(re.findall(r"\bpdl_wait\s*\(\s*\)\s*;", body)) != 1:
        return "begins with pdl_trigger(); but does not call pdl_wait(); exactly once"
    return None


def check(root):
    root = pathlib.Path(root)
    sources = {p: strip_comments(p.read_text()) for p in root.glob("src/**/*")
               if p.suffix in (".cu", ".cuh")}
    problems, launched = [], set()
    for p, text in sources.items():
        launched |= launched_names(text)
    for name in sorted(launched):
        bodies = [(p, b) for p, t in sources.items() for b in kernel_bodies(t, name)]
        if not bodies:
            problems.append("%s: launched by pdl_launch but no __global__ definition found" % name)
        for p, body in bodies:
            problem = body_problem(name, body)
            if problem:
                problems.append("%s (%s): %s" % (name, p.relative_to(root), problem))
        for p, text in sources.items():
            if re.search(r"\b%s\s*(<[^;]*?>)?\s*<<<" % re.escape(name), text):
                problems.append("%s (%s): also launched with <<<...>>>" % (name, p.relative_to(root)))
    for f in STEP_FILES:
        if not launched_names(sources[root / f]):
            problems.append("%s: no pdl_launch (the step's kernels are expected to use it)" % f)
    return launched, problems


def self_test():
    """the checker finds a kernel without pdl_enter, and passes one with it"""
    good = "__global__ void k(int *x) {\n  pdl_enter();\n  x[0] = 1;\n}\n" \
           "void f() { pdl_launch(k, 1, 1, 0, s, p); }"
    bad = good.replace("pdl_enter();", "")
    assert launched_names(good) == {"k"}
    assert kernel_bodies(good, "k")[0].lstrip().startswith("pdl_enter();")
    assert not kernel_bodies(bad, "k")[0].lstrip().startswith("pdl_enter();")
    tmpl = "template <int N>\n__global__ void __launch_bounds__(256) t(int *x) { pdl_enter(); }"
    assert kernel_bodies(tmpl, "t")[0].lstrip().startswith("pdl_enter();")
    early = "__global__ void gemm_mma_kernel(int *x) {\n  pdl_trigger();\n  int w = x[1];\n" \
            "  pdl_wait();\n  x[0] = w;\n}\n"
    body = kernel_bodies(early, "gemm_mma_kernel")[0]
    assert body_problem("gemm_mma_kernel", body) is None
    assert body_problem("other_kernel", body) == "first statement is not pdl_enter();"
    assert body_problem("gemm_mma_kernel", body.replace("pdl_wait();", "")) is not None
    assert body_problem("gemm_mma_kernel", body.replace("pdl_trigger();", "")) is not None
    assert body_problem("k", kernel_bodies(bad, "k")[0]) is not None


def main():
    self_test()
    launched, problems = check(sys.argv[1] if len(sys.argv) > 1 else ".")
    for p in problems:
        print("FAIL " + p)
    print("%d kernel(s) launched by pdl_launch, %d problem(s)" % (len(launched), len(problems)))
    return 1 if problems or len(launched) < 30 else 0


if __name__ == "__main__":
    sys.exit(main())
