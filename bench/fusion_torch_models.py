"""Plain-torch model definitions for bench/fusion_models.py.

Three models written from their papers' descriptions rather than taken from a
library: a GPT-2-style decoder, a YOLOv5s-like detector and a scaled-down
U-Net. Weights are random (torch's default initialisation under the caller's
seed); only the graph structure matters for the fusion comparison.

Needs Debian's python3-torch (not a CI dependency).
"""
import math

import torch
from torch import nn


# ---------------------------------------------------------------- GPT-2 style

class GPT2Config:
    vocab = 8192
    seq = 64
    hidden = 512
    heads = 8
    layers = 6
    eps = 1e-5


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        # constant lower-triangular mask, applied with Where as GPT-2 does
        causal = torch.tril(torch.ones(cfg.seq, cfg.seq, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, cfg.seq, cfg.seq), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = torch.where(self.causal[:, :, :t, :t], scores,
                             torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype))
        probs = torch.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


def gelu_tanh(x):
    # GPT-2's GELU approximation, spelled out so the export has Pow/Tanh
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.fc = nn.Linear(cfg.hidden, 4 * cfg.hidden)
        self.out = nn.Linear(4 * cfg.hidden, cfg.hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(gelu_tanh(self.fc(self.ln2(x))))


class GPT2(nn.Module):
    def __init__(self, cfg=GPT2Config):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
        self.wpe = nn.Embedding(cfg.seq, cfg.hidden)
        self.blocks = nn.ModuleList(GPT2Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.register_buffer("positions", torch.arange(cfg.seq), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(self.positions[:t])
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ------------------------------------------------------------- YOLOv5s-like

class ConvBnSiLU(nn.Module):
    def __init__(self, cin, cout, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = ConvBnSiLU(c, c, 1)
        self.cv2 = ConvBnSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP bottleneck with three convolutions."""

    def __init__(self, cin, cout, n=1, shortcut=True):
        super().__init__()
        hidden = cout // 2
        self.cv1 = ConvBnSiLU(cin, hidden, 1)
        self.cv2 = ConvBnSiLU(cin, hidden, 1)
        self.m = nn.Sequential(*(Bottleneck(hidden, shortcut) for _ in range(n)))
        self.cv3 = ConvBnSiLU(2 * hidden, cout, 1)

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], dim=1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        hidden = cin // 2
        self.cv1 = ConvBnSiLU(cin, hidden, 1)
        self.pool = nn.MaxPool2d(k, 1, k // 2)
        self.cv2 = ConvBnSiLU(4 * hidden, cout, 1)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        y3 = self.pool(y2)
        return self.cv2(torch.cat([x, y1, y2, y3], dim=1))


class Detect(nn.Module):
    ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
    STRIDES = (8, 16, 32)

    def __init__(self, channels, image_size, classes=80):
        super().__init__()
        self.no = classes + 5
        self.na = 3
        self.m = nn.ModuleList(nn.Conv2d(c, self.na * self.no, 1) for c in channels)
        for i, stride in enumerate(self.STRIDES):
            n = image_size // stride
            ys, xs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
            grid = torch.stack((xs, ys), 2).view(1, 1, n, n, 2).float() - 0.5
            anchors = torch.tensor(self.ANCHORS[i], dtype=torch.float32).view(1, self.na, 1, 1, 2)
            self.register_buffer(f"grid{i}", grid.expand(1, self.na, n, n, 2).contiguous(), persistent=False)
            self.register_buffer(f"anchor_grid{i}", anchors.expand(1, self.na, n, n, 2).contiguous(),
                                 persistent=False)

    def forward(self, feats):
        outs = []
        for i, (conv, x) in enumerate(zip(self.m, feats)):
            b, _, ny, nx = x.shape
            y = conv(x).view(b, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
            xy = (y[..., 0:2] * 2 + getattr(self, f"grid{i}")) * self.STRIDES[i]
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor_grid{i}")
            y = torch.cat((xy, wh, y[..., 4:]), -1)
            outs.append(y.view(b, self.na * ny * nx, self.no))
        return torch.cat(outs, 1)


class YOLO(nn.Module):
    """YOLOv5s layout (width 0.5, depth 0.33): backbone, SPPF, PAN neck, 3-scale head."""

    def __init__(self, image_size=320, classes=80):
        super().__init__()
        w = (32, 64, 128, 256, 512)
        self.stem = ConvBnSiLU(3, w[0], 6, 2, 2)
        self.down1 = ConvBnSiLU(w[0], w[1], 3, 2)
        self.c3_1 = C3(w[1], w[1], 1)
        self.down2 = ConvBnSiLU(w[1], w[2], 3, 2)
        self.c3_2 = C3(w[2], w[2], 2)
        self.down3 = ConvBnSiLU(w[2], w[3], 3, 2)
        self.c3_3 = C3(w[3], w[3], 3)
        self.down4 = ConvBnSiLU(w[3], w[4], 3, 2)
        self.c3_4 = C3(w[4], w[4], 1)
        self.sppf = SPPF(w[4], w[4], 5)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.lat5 = ConvBnSiLU(w[4], w[3], 1)
        self.top4 = C3(2 * w[3], w[3], 1, shortcut=False)
        self.lat4 = ConvBnSiLU(w[3], w[2], 1)
        self.out3 = C3(2 * w[2], w[2], 1, shortcut=False)
        self.pan3 = ConvBnSiLU(w[2], w[2], 3, 2)
        self.out4 = C3(2 * w[2], w[3], 1, shortcut=False)
        self.pan4 = ConvBnSiLU(w[3], w[3], 3, 2)
        self.out5 = C3(2 * w[3], w[4], 1, shortcut=False)
        self.detect = Detect((w[2], w[3], w[4]), image_size, classes)

    def forward(self, x):
        p3 = self.c3_2(self.down2(self.c3_1(self.down1(self.stem(x)))))
        p4 = self.c3_3(self.down3(p3))
        p5 = self.sppf(self.c3_4(self.down4(p4)))
        l5 = self.lat5(p5)
        l4 = self.lat4(self.top4(torch.cat([self.up(l5), p4], 1)))
        n3 = self.out3(torch.cat([self.up(l4), p3], 1))
        n4 = self.out4(torch.cat([self.pan3(n3), l4], 1))
        n5 = self.out5(torch.cat([self.pan4(n4), l5], 1))
        return self.detect([n3, n4, n5])


# ---------------------------------------------------------------------- U-Net

def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Ronneberger et al.'s U-Net with 'same' padding, base width 32."""

    def __init__(self, in_channels=3, classes=2, base=32):
        super().__init__()
        widths = [base * 2 ** i for i in range(5)]  # 32 .. 512
        self.down = nn.ModuleList()
        cin = in_channels
        for w in widths[:4]:
            self.down.append(double_conv(cin, w))
            cin = w
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(widths[3], widths[4])
        self.upconv = nn.ModuleList()
        self.up = nn.ModuleList()
        for w in reversed(widths[:4]):
            self.upconv.append(nn.ConvTranspose2d(2 * w, w, 2, stride=2))
            self.up.append(double_conv(2 * w, w))
        self.head = nn.Conv2d(base, classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for upconv, block, skip in zip(self.upconv, self.up, reversed(skips)):
            x = block(torch.cat([skip, upconv(x)], dim=1))
        return self.head(x)


def randomize_norms(model, generator):
    """Gives every LayerNorm and BatchNorm random affine terms (and BatchNorm
    random running statistics), and every all-zero parameter (biases,
    torchvision ViT's zero-initialised head and class token) small random values.
    Fresh norms are all ones and zeros, and torch.onnx.export deduplicates
    initialisers with equal values into Identity nodes, which would distort
    the node counts; random statistics also make BatchNorm folding actually
    matter numerically."""
    def uniform(n, lo, hi):
        return torch.rand(n, generator=generator) * (hi - lo) + lo

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                if m.weight is not None:
                    m.weight.copy_(uniform(m.weight.shape, 0.75, 1.25))
                    m.bias.copy_(uniform(m.bias.shape, -0.1, 0.1))
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(uniform(m.num_features, -0.1, 0.1))
                m.running_var.copy_(uniform(m.num_features, 0.75, 1.25))
        for name, p in model.named_parameters():
            if not p.any():
                p.copy_(uniform(p.shape, -0.02, 0.02))


def reinit_linears(model, generator, std=0.02):
    """BERT-style N(0, std) weights and small random biases for every Linear and
    MultiheadAttention projection; TransformerEncoder deep-copies one layer, so
    without this all layers would share the same values."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=generator) * std)
            elif name.endswith("bias") and ("linear" in name or "proj" in name):
                p.copy_(torch.randn(p.shape, generator=generator) * std)
