"""headscope from Python: TransformerLens' interface over headscope's C library.

    import headscope
    model = headscope.load("tests/checkpoint/circuit_tiny.safetensors")
    tokens = model.to_tokens("the animal did not cross the street because it was too tired . it")
    logits, cache = model.run_with_cache(tokens)
    cache["pattern", 0]                     # [batch, head, dest, src], float32
    logits = model.run_with_hooks(tokens, fwd_hooks=[("blocks.0.attn.hook_z", fn)])
    headscope.patch(model, "prompts.jsonl") # patch --json as a dict
    headscope.figures.attention(cache["pattern", 0][0], model.to_str_tokens(tokens)).save("a.pdf")

Every number is computed by libheadscope.so (the library the CLI is built
from); arrays are numpy. Reference: help(headscope.load),
help(headscope.HookedTransformer), help(headscope.ActivationCache),
help(headscope.patch), help(headscope.ablate), help(headscope.dla),
help(headscope.figures) (attention, grid, bars, heatmap, dla, patch, circuit:
figures drawn by the library's viz code, inline in Jupyter, saved as PNG, SVG
or PDF).
Errors raise headscope.HeadscopeError with the library's one-line message.

Import headscope before numpy (or anything else that loads OpenBLAS): on a CPU
newer than Debian's OpenBLAS, the import sets OPENBLAS_CORETYPE as the CLI
does, for the CLI's speed and bits (headscope.BLAS_CORE names the kernels in
use; a warning says when they are not the CLI's).
"""
from .errors import HeadscopeError
from ._lib import BLAS_CORE, LIB_PATH
from .cache import ActivationCache, get_act_name
from .model import Config, FactoredMatrix, HookedTransformer, HookPoint, load
from . import figures
from .experiments import Discovery, ablate, discover, dla, faithfulness, heads, lens, patch, prompts_ioi

__version__ = "0.1.0"
__all__ = ["load", "HookedTransformer", "FactoredMatrix", "ActivationCache", "HookPoint", "Config", "HeadscopeError",
           "get_act_name", "patch", "ablate", "dla", "lens", "heads", "discover", "faithfulness", "prompts_ioi", "Discovery", "figures", "LIB_PATH", "BLAS_CORE"]
