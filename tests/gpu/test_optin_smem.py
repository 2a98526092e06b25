"""A kernel whose dynamic shared memory is raised to the device's opt-in maximum declares no
static __shared__ variable.

cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) fails when the
kernel has static shared memory, since the dynamic maximum is the opt-in limit minus the static
part. Session 32's fused SSM step gave mat4_kernel a `__shared__ int` flag; every GPU SSM state
then failed to build ("cannot raise the v4 materialisation's shared memory to 232448 bytes",
H100, 2026-12-07, docs/gpu-results.md "Session 33" call 1), which only a GPU showed. This test
finds it on any machine: it collects the kernels raised to the variable `optin` (directly, or
through a `for (const void *f : ARRAY)` loop over an array of kernel pointers) and refuses a
`__shared__` declaration without `extern` in their bodies. It also checks that it is not vacuous
(mat4_kernel, ro4_kernel and pre3_kernel are found) and that it catches a planted case.

Usage: python3 tests/gpu/test_optin_smem.py REPO_ROOT
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_pdl_kernels import kernel_bodies, matching, strip_comments  # noqa: E402

# kernels that must be found raised to the opt-in maximum (the checker is not vacuous)
EXPECTED = {"mat4_kernel", "ro4_kernel", "pre3_kernel"}


def top_level_args(text, open_paren):
    """the comma-separated arguments of the call whose '(' is at open_paren"""
    close = matching(text, open_paren, "(", ")")
    args, depth, start = [], 0, open_paren + 1
    for j in range(open_paren + 1, close):
        c = text[j]
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:j].strip())
            start = j + 1
    args.append(text[start:close].strip())
    return args


def kernels_in_array(text, before, array):
    """kernel names in the last `const void *ARRAY[] = {...}` before offset `before`"""
    decls = list(re.finditer(r"const\s+void\s*\*\s*%s\s*\[\s*\]\s*=\s*\{" % re.escape(array),
                             text[:before]))
    if not decls:
        return set()
    brace = decls[-1].end() - 1
    init = text[brace:matching(text, brace, "{", "}")]
    return set(re.findall(r"reinterpret_cast<\s*const\s+void\s*\*\s*>\(\s*([A-Za-z_]\w*)", init))


def raised_to_optin(text):
    """names of the kernels this source raises to `optin`"""
    names = set()
    for m in re.finditer(r"\bcudaFuncSetAttribute\s*\(", text):
        args = top_level_args(text, m.end() - 1)
        if len(args) != 3 or args[2] != "optin":
            continue
        target = args[0]
        loop = re.search(r"for\s*\(\s*const\s+void\s*\*\s*%s\s*:\s*([A-Za-z_]\w*)\s*\)[^;]*$"
                         % re.escape(target), text[max(0, m.start() - 300):m.start()])
        if loop:
            names |= kernels_in_array(text, m.start(), loop.group(1))
        else:
            first = re.match(r"([A-Za-z_]\w*)", target)
            if first:
                names.add(first.group(1))
    return names


def static_shared(body):
    """the static __shared__ declarations (not `extern __shared__`) of a kernel body"""
    return [m.group(0).strip() for m in re.finditer(r"(?<!extern)(\s)__shared__[^;]*;", body)
            if not re.search(r"\bextern\s*$", body[:m.start() + 1])]


def check(root):
    root = pathlib.Path(root)
    sources = {p: strip_comments(p.read_text()) for p in root.glob("src/**/*")
               if p.suffix in (".cu", ".cuh")}
    raised = set()
    for text in sources.values():
        raised |= raised_to_optin(text)
    problems = ["%s: expected among the kernels raised to the opt-in maximum, not found" % n
                for n in sorted(EXPECTED - raised)]
    for name in sorted(raised):
        bodies = [(p, b) for p, t in sources.items() for b in kernel_bodies(t, name)]
        if not bodies:
            problems.append("%s: raised to optin but no __global__ definition found" % name)
        for p, body in bodies:
            for decl in static_shared(body):
                problems.append("%s (%s): static shared memory '%s' in a kernel raised to the "
                                "opt-in maximum" % (name, p.relative_to(root), decl))
    return raised, problems


def self_test():
    """the checker finds both ways of raising and a planted static __shared__"""
    src = """
template <int M> __global__ void k4(float *x) { extern __shared__ float s[]; x[0] = s[0]; }
__global__ void k5(float *x) { extern __shared__ float s[]; x[0] = s[0]; }
void raise(int optin, int other) {
  const void *arr[] = {reinterpret_cast<const void *>(k4<4>), reinterpret_cast<const void *>(k4<8>)};
  for (const void *f : arr)
    if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) != 0) return;
  cudaFuncSetAttribute(k5, a, optin);
  cudaFuncSetAttribute(k6, a, other);
}
"""
    assert raised_to_optin(src) == {"k4", "k5"}, raised_to_optin(src)
    assert static_shared(kernel_bodies(src, "k5")[0]) == []
    planted = src.replace("extern __shared__ float s[]; x[0] = s[0]; }\nvoid",
                          "extern __shared__ float s[];\n  __shared__ int flag; x[0] = s[0]; }\nvoid")
    assert static_shared(kernel_bodies(planted, "k5")[0]) == ["__shared__ int flag;"]


def main():
    self_test()
    raised, problems = check(sys.argv[1] if len(sys.argv) > 1 else ".")
    for p in problems:
        print("FAIL " + p)
    print("%d kernel(s) raised to the opt-in maximum (%s), %d problem(s)"
          % (len(raised), ", ".join(sorted(raised)), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
