# _models.py - issue 45's real models, written once against either library's PyTorch API
# (`lib` is `torch` or `pygpu`), so bench_models.py builds the same network on both sides and
# copies pygpu's weights into torch's. Each builder takes `lib` and a size dict (full or tiny).
#
#   resnet18     ResNet-18 for CIFAR (3x3 stem, no max pool, BasicBlock x [2, 2, 2, 2] at 64,
#                128, 256, 512 channels, global average pool, Linear): the common CIFAR form
#                (kuangliu/pytorch-cifar); SGD momentum 0.9, weight decay 5e-4
#   mobilenetv2  MobileNetV2 for CIFAR (stride 1 stem and first stages, inverted residuals of
#                expansion 6, depthwise 3x3, 1280-channel head), ReLU as the CIFAR form has it
#                (pygpu has no ReLU6 yet); SGD momentum 0.9, weight decay 4e-5
#   gpt          a character-level GPT (nanoGPT's shape): n_layer x n_embd, n_head heads, block
#                256, vocabulary 65, pre-LayerNorm blocks, causal SDPA, exact GELU, tied
#                embedding/head; AdamW (betas 0.9/0.99, weight decay 0.1 on matrices only) and
#                clip_grad_norm_(1.0)
#   vit          ViT-tiny on 32x32 (patch 4: 64 patches and a class token, width 192, depth 12,
#                3 heads, MLP 768, LayerNorm, exact GELU); AdamW, clip_grad_norm_(1.0)
#   lstm         a word-level LSTM language model (PyTorch's word_language_model: Embedding,
#                2-layer LSTM, Linear decoder), vocabulary 10,000, 35 steps; SGD and
#                clip_grad_norm_(0.25)
# Dropout is 0 everywhere so both sides compute the same function.
FULL = {
    "resnet18": dict(width=64, blocks=(2, 2, 2, 2), image=32, classes=10),
    "mobilenetv2": dict(width_mult=1.0, image=32, classes=10, head=1280),
    "gpt": dict(n_layer=6, n_head=6, n_embd=384, block=256, vocab=65),
    "vit": dict(image=32, patch=4, dim=192, depth=12, heads=3, mlp=768, classes=10),
    "lstm": dict(vocab=10000, emb=512, hidden=512, layers=2, bptt=35),
}
TINY = {
    "resnet18": dict(width=8, blocks=(1, 1, 1, 1), image=8, classes=10),
    "mobilenetv2": dict(width_mult=0.25, image=8, classes=10, head=64),
    "gpt": dict(n_layer=2, n_head=2, n_embd=32, block=16, vocab=65),
    "vit": dict(image=8, patch=4, dim=32, depth=2, heads=2, mlp=64, classes=10),
    "lstm": dict(vocab=100, emb=16, hidden=16, layers=2, bptt=5),
}

# The per-step cost outside the kernels (bench_models.py --overhead): each model at its full
# depth (the same layers, so the same op calls per step) with tensors too small for the
# kernels to matter, so a step's process CPU time is the Python layer, autograd, dispatch and
# allocation of each library
OVERHEAD = {
    "resnet18": dict(width=8, blocks=(2, 2, 2, 2), image=8, classes=10),
    "mobilenetv2": dict(width_mult=0.25, image=8, classes=10, head=64),
    "gpt": dict(n_layer=6, n_head=6, n_embd=48, block=16, vocab=65),
    "vit": dict(image=8, patch=4, dim=48, depth=12, heads=3, mlp=96, classes=10),
    "lstm": dict(vocab=100, emb=16, hidden=16, layers=2, bptt=35),
}
OVERHEAD_BATCH = 2


def resnet18(lib, width, blocks, image, classes):
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            layers, cin = [], width
            for i, n in enumerate(blocks):
                cout = width * 2 ** i
                for j in range(n):
                    layers.append(BasicBlock(cin, cout, 2 if (i > 0 and j == 0) else 1))
                    cin = cout
            self.layers = nn.Sequential(*layers)
            self.linear = nn.Linear(cin, classes)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layers(out)
            out = F.adaptive_avg_pool2d(out, 1).flatten(1)
            return self.linear(out)
    return ResNet()


def mobilenetv2(lib, width_mult, image, classes, head):
    nn, F = lib.nn, lib.nn.functional
    # (expansion, out_planes, num_blocks, stride): the CIFAR form (stride 1 in stage 2)
    cfg = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]

    class Block(nn.Module):
        def __init__(self, cin, cout, expansion, stride):
            super().__init__()
            planes = expansion * cin
            self.stride = stride
            self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, groups=planes, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride == 1 and cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return out + self.shortcut(x) if self.stride == 1 else out

    def ch(c):
        return max(8, int(c * width_mult))

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            cin = ch(32)
            self.conv1 = nn.Conv2d(3, cin, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cin)
            layers = []
            for expansion, out, n, stride in cfg:
                for j in range(n):
                    layers.append(Block(cin, ch(out), expansion, stride if j == 0 else 1))
                    cin = ch(out)
            self.layers = nn.Sequential(*layers)
            self.conv2 = nn.Conv2d(cin, head, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(head)
            self.linear = nn.Linear(head, classes)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layers(out)
            out = F.relu(self.bn2(self.conv2(out)))
            out = F.adaptive_avg_pool2d(out, 1).flatten(1)
            return self.linear(out)
    return MobileNetV2()


def _attention_block(lib, dim, heads, mlp, causal):
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):  # x: (B, T, C)
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(dim, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)  # (B, heads, T, head dim)
            k = k.view(B, T, heads, C // heads).transpose(1, 2)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
    return Block()


def gpt(lib, n_layer, n_head, n_embd, block, vocab):
    nn, F = lib.nn, lib.nn.functional

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([_attention_block(lib, n_embd, n_head, 4 * n_embd, True)
                                    for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2 and nanoGPT
            for m in self.modules():  # nanoGPT's initialization
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, 0.0, 0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, idx):  # idx: (B, T) int64
            T = idx.shape[1]
            pos = lib.arange(T, device=idx.device)  # on the tokens' device (nanoGPT)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            return self.lm_head(self.ln_f(x))  # (B, T, vocab)
    return GPT()


def vit(lib, image, patch, dim, depth, heads, mlp, classes):
    nn = lib.nn
    n_patches = (image // patch) ** 2

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, patch, patch)
            self.cls_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(lib.randn(1, n_patches + 1, dim) * 0.02)
            self.blocks = nn.ModuleList([_attention_block(lib, dim, heads, mlp, False)
                                         for _ in range(depth)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):  # x: (B, 3, H, W)
            x = self.patch_embed(x).flatten(2).transpose(1, 2)  # (B, patches, dim)
            cls = self.cls_token.expand(x.shape[0], -1, -1)
            x = lib.cat([cls, x], dim=1) + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x)[:, 0])
    return ViT()


def lstm(lib, vocab, emb, hidden, layers, bptt):
    nn = lib.nn

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = nn.LSTM(emb, hidden, layers)
            self.decoder = nn.Linear(hidden, vocab)

        def forward(self, idx):  # idx: (T, B) int64, time first as word_language_model
            out, _ = self.rnn(self.encoder(idx))
            return self.decoder(out)  # (T, B, vocab)
    return RNNModel()


BUILDERS = {"resnet18": resnet18, "mobilenetv2": mobilenetv2, "gpt": gpt, "vit": vit,
            "lstm": lstm}


def optimizer(lib, name, model):
    """The model's optimizer as its published training script makes it."""
    if name in ("resnet18", "mobilenetv2"):
        wd = 5e-4 if name == "resnet18" else 4e-5
        return lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=wd)
    if name == "lstm":
        return lib.optim.SGD(model.parameters(), lr=20.0)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                            {"params": no_decay, "weight_decay": 0.0}],
                           lr=1e-3 if name == "gpt" else 5e-4, betas=(0.9, 0.99))


CLIP = {"gpt": 1.0, "vit": 1.0, "lstm": 0.25}


def example_batch(rng, name, size, batch):
    """(inputs, targets) as NumPy arrays: images and labels, or token ids and next tokens."""
    if name in ("resnet18", "mobilenetv2", "vit"):
        x = rng.standard_normal((batch, 3, size["image"], size["image"])).astype("float32")
        return x, rng.integers(0, size["classes"], batch)
    if name == "gpt":
        t = rng.integers(0, size["vocab"], (batch, size["block"] + 1))
        return t[:, :-1], t[:, 1:]
    t = rng.integers(0, size["vocab"], (size["bptt"] + 1, batch))
    return t[:-1], t[1:]


def loss_of(lib, name, out, y):
    F = lib.nn.functional
    if name in ("gpt", "lstm"):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def flops_per_sample(name, size):
    """Multiply-adds x 2 of one forward of one sample (convolutions and products only)."""
    s = size
    if name == "gpt":
        C, T, L = s["n_embd"], s["block"], s["n_layer"]
        per_token = L * (12 * C * C) + C * s["vocab"]
        return 2 * T * per_token + L * 2 * T * T * C  # causal: half of QK^T and PV
    if name == "vit":
        C, T = s["dim"], (s["image"] // s["patch"]) ** 2 + 1
        per_token = s["depth"] * (4 * C * C + 2 * C * s["mlp"])
        return 2 * T * per_token + s["depth"] * 4 * T * T * C + 2 * T * 3 * s["patch"] ** 2 * C
    if name == "lstm":
        H, E = s["hidden"], s["emb"]
        per_step = 4 * H * (E + H) + (s["layers"] - 1) * 4 * H * 2 * H + H * s["vocab"]
        return 2 * s["bptt"] * per_step
    return None  # convolution nets: counted from the layers by bench_models.conv_flops

