"""An independent float64 GPT-2 for headscope's tests (numpy only).

Written from Hugging Face transformers' models/gpt2/modeling_gpt2.py
(GPT2Model / GPT2Attention._attn / GPT2MLP / GPT2LMHeadModel) and
configuration_gpt2.py, and TransformerLens' weight conversion and processing
(transformer_lens/pretrained/weight_conversions/gpt2.py, weight_processing.py
of v3.5.1), not from headscope's C:

  h = wte[ids] + wpe[0..T)
  per block l:  a = LN(h; ln_1);  q | k | v = a c_attn.w + c_attn.b  (Conv1D: [in, out]);
                head h of q is columns h*dh .. h*dh+dh-1;  w = q k^T
                (/ sqrt(dh) when scale_attn_weights; / (l + 1) when
                scale_attn_by_inverse_layer_idx); causal mask; softmax;
                z = w v;  h += merge(z) attn.c_proj.w + attn.c_proj.b
                h += act(LN(h; ln_2) c_fc.w + c_fc.b) mlp.c_proj.w + mlp.c_proj.b
  logits = LN(h; ln_f) lm_head.w^T   (lm_head tied to wte when absent)
  LN(x) = (x - mean) / sqrt(var + eps) * w + b   (biased variance)
  gelu_new(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (NewGELUActivation)
  gelu(x) = 0.5 x (1 + erf(x / sqrt 2));  relu.

Weights are a dict of Hugging Face names without the "transformer." prefix.
"""
import math

import numpy as np

ACTS = {
    "gelu_new": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "relu": lambda x: np.maximum(x, 0.0),
}


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def dims(cfg):
    d = cfg.get("n_embd", 768)
    h = cfg.get("n_head", 12)
    return d, h, d // h, cfg.get("n_layer", 12)


def forward(wt, cfg, ids):
    """Float64 forward of one sequence ids (T,): patterns [L, H, T, T] and
    logits [T, V]."""
    D, H, dh, L = dims(cfg)
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = ACTS[cfg.get("activation_function", "gelu_new")]
    T = len(ids)
    h = wt["wte.weight"][ids] + wt["wpe.weight"][:T]
    causal = np.tril(np.ones((T, T), dtype=bool))
    pats = []
    for layer in range(L):
        p = "h.%d." % layer
        a = layer_norm(h, wt[p + "ln_1.weight"], wt[p + "ln_1.bias"], eps)
        qkv = a @ wt[p + "attn.c_attn.weight"] + wt[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(T, H, dh).transpose(1, 0, 2) for i in range(3))
        w = q @ k.transpose(0, 2, 1)
        if cfg.get("scale_attn_weights", True):
            w = w / math.sqrt(dh)
        if cfg.get("scale_attn_by_inverse_layer_idx", False):
            w = w / float(layer + 1)
        w = np.where(causal, w, np.finfo(np.float64).min)
        w = np.exp(w - w.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
        pats.append(w)
        z = (w @ v).transpose(1, 0, 2).reshape(T, D)
        h = h + z @ wt[p + "attn.c_proj.weight"] + wt[p + "attn.c_proj.bias"]
        m = layer_norm(h, wt[p + "ln_2.weight"], wt[p + "ln_2.bias"], eps)
        m = act(m @ wt[p + "mlp.c_fc.weight"] + wt[p + "mlp.c_fc.bias"])
        h = h + m @ wt[p + "mlp.c_proj.weight"] + wt[p + "mlp.c_proj.bias"]
    h = layer_norm(h, wt["ln_f.weight"], wt["ln_f.bias"], eps)
    lm = wt.get("lm_head.weight", wt["wte.weight"])
    return np.stack(pats), h @ lm.T


def hf_to_tl(wt, cfg):
    """TransformerLens' convert_gpt2_weights: the TL state dict (each array
    contiguous, in the dtype it came in)."""
    D, H, dh, L = dims(cfg)
    sd = {"embed.W_E": wt["wte.weight"], "pos_embed.W_pos": wt["wpe.weight"]}
    for layer in range(L):
        p, b = "h.%d." % layer, "blocks.%d." % layer
        sd[b + "ln1.w"], sd[b + "ln1.b"] = wt[p + "ln_1.weight"], wt[p + "ln_1.bias"]
        W = wt[p + "attn.c_attn.weight"]
        for i, x in enumerate("QKV"):  # "m (i h) -> i m h"
            sd[b + "attn.W_" + x] = W[:, i * D:(i + 1) * D].reshape(D, H, dh).transpose(1, 0, 2)
            sd[b + "attn.b_" + x] = wt[p + "attn.c_attn.bias"].reshape(3, H, dh)[i]
        sd[b + "attn.W_O"] = wt[p + "attn.c_proj.weight"].reshape(H, dh, D)
        sd[b + "attn.b_O"] = wt[p + "attn.c_proj.bias"]
        sd[b + "ln2.w"], sd[b + "ln2.b"] = wt[p + "ln_2.weight"], wt[p + "ln_2.bias"]
        sd[b + "mlp.W_in"], sd[b + "mlp.b_in"] = wt[p + "mlp.c_fc.weight"], wt[p + "mlp.c_fc.bias"]
        sd[b + "mlp.W_out"], sd[b + "mlp.b_out"] = wt[p + "mlp.c_proj.weight"], wt[p + "mlp.c_proj.bias"]
    sd["ln_final.w"], sd["ln_final.b"] = wt["ln_f.weight"], wt["ln_f.bias"]
    sd["unembed.W_U"] = wt.get("lm_head.weight", wt["wte.weight"]).T
    sd["unembed.b_U"] = np.zeros(sd["unembed.W_U"].shape[1], dtype=sd["unembed.W_U"].dtype)
    return {k: np.ascontiguousarray(v) for k, v in sd.items()}


def tl_process(sd, n_layers):
    """HookedTransformer.from_pretrained's default processing
    (ProcessWeights.process_weights: fold_ln, center_writing_weights,
    center_unembed, fold_value_biases), on a TL state dict; the LN weights
    are dropped (normalization_type "LNPre")."""
    sd = {k: v.copy() for k, v in sd.items()}
    for layer in range(n_layers):  # fold_layer_norm
        b = "blocks.%d." % layer
        w, bb = sd.pop(b + "ln1.w"), sd.pop(b + "ln1.b")
        for x in "QKV":
            W = sd[b + "attn.W_" + x]
            sd[b + "attn.b_" + x] = sd[b + "attn.b_" + x] + (W * bb[None, :, None]).sum(-2)
            W = W * w[None, :, None]
            sd[b + "attn.W_" + x] = W - W.mean(-2, keepdims=True)
        w, bb = sd.pop(b + "ln2.w"), sd.pop(b + "ln2.b")
        W = sd[b + "mlp.W_in"]
        sd[b + "mlp.b_in"] = sd[b + "mlp.b_in"] + (W * bb[:, None]).sum(-2)
        W = W * w[:, None]
        sd[b + "mlp.W_in"] = W - W.mean(0, keepdims=True)
    w, bb = sd.pop("ln_final.w"), sd.pop("ln_final.b")
    W = sd["unembed.W_U"]
    sd["unembed.b_U"] = sd["unembed.b_U"] + (W * bb[:, None]).sum(-2)
    W = W * w[:, None]
    sd["unembed.W_U"] = W - W.mean(0, keepdims=True)
    for k in ("embed.W_E", "pos_embed.W_pos"):  # center_writing_weights
        sd[k] = sd[k] - sd[k].mean(-1, keepdims=True)
    for layer in range(n_layers):
        b = "blocks.%d." % layer
        for k in ("attn.W_O", "mlp.W_out"):
            sd[b + k] = sd[b + k] - sd[b + k].mean(-1, keepdims=True)
        for k in ("attn.b_O", "mlp.b_out"):
            sd[b + k] = sd[b + k] - sd[b + k].mean()
    sd["unembed.W_U"] = sd["unembed.W_U"] - sd["unembed.W_U"].mean(-1, keepdims=True)  # center_unembed
    sd["unembed.b_U"] = sd["unembed.b_U"] - sd["unembed.b_U"].mean()
    for layer in range(n_layers):  # fold_value_biases, then b_O centred
        b = "blocks.%d." % layer
        sd[b + "attn.b_O"] = sd[b + "attn.b_O"] + (sd[b + "attn.b_V"][:, :, None] * sd[b + "attn.W_O"]).sum((0, 1))
        sd[b + "attn.b_V"] = np.zeros_like(sd[b + "attn.b_V"])
        sd[b + "attn.b_O"] = sd[b + "attn.b_O"] - sd[b + "attn.b_O"].mean()
    return sd
