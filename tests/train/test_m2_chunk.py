"""bind_m2_chunk (scripts/train_fixture_models.py --m2-chunk) on a stand-in model whose Mamba-2
mixer computes one linear recurrence in chunks of `chunk_size`: a chunking that only moves the
rounding is bound (and recorded), a mixer that ignores the attribute is detected and left at 64,
and a chunked form that is wrong is refused. Needs torch (not transformers);
scripts/train_fixture_session.sh runs it before training, on the GPU machine.
    python3 tests/train/test_m2_chunk.py   -> "ok" """
import torch
import torch.nn as nn

from train_script import tfm


class FakeMamba2Mixer(nn.Module):
    """h_t = a h_{t-1} + x_t per channel, computed chunk by chunk (within a chunk from a
    cumulative product, then the carried state): exact for any chunk length in real numbers."""
    def __init__(self, d, mode="exact"):
        super().__init__()
        self.chunk_size = 64
        self.mode = mode
        self.a = 0.97

    def forward(self, x):                       # [1][n][d]
        n = x.shape[1]
        c = 64 if self.mode == "ignores" else self.chunk_size
        out, h = [], torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
        for s in range(0, n, c):
            xc = x[:, s:s + c]
            k = xc.shape[1]
            p = self.a ** torch.arange(1, k + 1, dtype=x.dtype)             # a^1..a^k
            # within the chunk: h_j = sum_{i<=j} a^{j-i} x_i, via a lower-triangular matrix
            j = torch.arange(k)
            w = torch.where(j[:, None] >= j[None, :],
                            self.a ** (j[:, None] - j[None, :]).clamp(min=0).to(x.dtype),
                            torch.zeros((), dtype=x.dtype))
            hc = torch.einsum("ji,bid->bjd", w, xc) + p[None, :, None] * h[:, None, :]
            if self.mode == "wrong":
                hc = hc * (1 + 0.5 * (c != 64))
            out.append(hc)
            h = hc[:, -1]
        return torch.cat(out, 1)


class Out:
    def __init__(self, logits):
        self.logits = logits


class FakeModel(nn.Module):
    def __init__(self, mode):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(256, 16)
        self.mix = FakeMamba2Mixer(16, mode)
        self.head = nn.Linear(16, 256)

    def forward(self, input_ids, use_cache=False):
        return Out(self.head(self.mix(self.emb(input_ids))))


r = tfm.bind_m2_chunk(FakeModel("exact"), 256, "cpu", n=600)
assert r["bound"] and r["size"] == 256 and 0 < r["max_rel_vs_64"] < 1e-5, r
m = FakeModel("exact"); tfm.bind_m2_chunk(m, 512, "cpu", n=600)
assert m.mix.chunk_size == 512 and m.training
m = FakeModel("ignores"); r = tfm.bind_m2_chunk(m, 256, "cpu", n=600)
assert r == {"size": 64, "bound": False} and m.mix.chunk_size == 64, r
m = FakeModel("wrong")
try:
    tfm.bind_m2_chunk(m, 256, "cpu", n=600)
    raise AssertionError("a wrong chunked form was bound")
except RuntimeError as e:
    assert "differ from chunk 64" in str(e) and m.mix.chunk_size == 64, e
print("ok")
