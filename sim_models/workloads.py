# SPDX-License-Identifier: Apache-2.0
"""The paper's workloads: the all-reduce-bearing sliced GEMMs of Transformer sub-layers.

Every sub-layer's GEMM produces a ``[T, H]`` partial output per GPU, which the TP group
all-reduces (T3.md):

==========  ==========================  ======================
sub-layer   GEMM                        pass
==========  ==========================  ======================
``OP``      ``[T, H/TP] x [H/TP, H]``   attention output projection, forward
``FC-2``    ``[T, 4H/TP] x [4H/TP, H]`` second MLP GEMM, forward
``FC-1``    ``[T, 4H/TP] x [4H/TP, H]`` first MLP GEMM, backward (input gradient)
``IP``      ``[T, 3H/TP] x [3H/TP, H]`` QKV input projection, backward (input gradient)
==========  ==========================  ======================

Token count T (a documented choice; the paper's is not known here): ``T = sequence length x
micro-batch`` from the models' published training setups.

* Mega-GPT-2 (H = 3072) and T-NLG (H = 4256): sequence 1024 (both were trained at 1024);
  micro-batch 8, Megatron-LM's 8.3B setup (global batch 512 over 64 data-parallel
  replicas). ``T = 8192``.
* GPT-3 (H = 12288), PaLM (H = 18432), MT-NLG (H = 20480): sequence 2048 (all three);
  micro-batch 1, MT-NLG's published setup (needed to fit with pipeline parallelism).
  ``T = 2048``.

:func:`token_sweep` varies T around these.
"""

from dataclasses import dataclass

from .gpu import GemmShape


__all__ = ["MODELS", "SUBLAYERS", "same_gemm", "Workload", "default_tokens", "paper_workloads",
           "token_sweep"]


#: name -> (hidden size H, sequence length, micro-batch)
MODELS = {
    "Mega-GPT-2": (3072, 1024, 8),
    "T-NLG":      (4256, 1024, 8),
    "GPT-3":      (12288, 2048, 1),
    "PaLM":       (18432, 2048, 1),
    "MT-NLG":     (20480, 2048, 1),
}

#: sub-layer -> multiple of H/TP in its GEMM's reduction dimension K
SUBLAYERS = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}


def same_gemm(sublayer):
    """The first sub-layer of :data:`SUBLAYERS` whose GEMM has ``sublayer``'s shape: FC-2
    for FC-1 (the MLP's first GEMM, backward, is ``[T, 4H/TP] x [4H/TP, H]`` as its second,
    forward, is), else ``sublayer`` itself. The models and the co-simulation use a sub-layer
    only for its shape, so the two give the same figures and a table runs them once."""
    return next(s for s, k in SUBLAYERS.items() if k == SUBLAYERS[sublayer])

_TP_OF = {"Mega-GPT-2": (8, 16), "T-NLG": (8, 16), "GPT-3": (32,), "PaLM": (32,),
          "MT-NLG": (32,)}


@dataclass(frozen=True)
class Workload:
    """One sub-layer of one model at one TP degree, with T tokens."""
    model:    str
    tp:       int
    sublayer: str
    tokens:   int

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {tuple(MODELS)}, not {self.model!r}")
        if self.sublayer not in SUBLAYERS:
            raise ValueError(f"sublayer must be one of {tuple(SUBLAYERS)}, not {self.sublayer!r}")
        hidden = MODELS[self.model][0]
        if isinstance(self.tp, bool) or not isinstance(self.tp, int) or not 2 <= self.tp <= hidden:
            raise ValueError(f"tp must be an integer in [2, {hidden}], not {self.tp!r}")
        if hidden * SUBLAYERS[self.sublayer] % self.tp:
            raise ValueError(f"tp must divide {SUBLAYERS[self.sublayer]}*H = "
                             f"{hidden * SUBLAYERS[self.sublayer]}, not {self.tp!r}")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 1:
            raise ValueError(f"tokens must be an integer in [1, inf), not {self.tokens!r}")

    @property
    def hidden(self):
        """H."""
        return MODELS[self.model][0]

    @property
    def shape(self):
        """The per-GPU GEMM ``[T, K] x [K, H]``."""
        return GemmShape(m=self.tokens, k=SUBLAYERS[self.sublayer] * self.hidden // self.tp,
                         n=self.hidden)


def default_tokens(model):
    """T of ``model``: sequence length x micro-batch (module docstring)."""
    _, seq, micro = MODELS[model]
    return seq * micro


def paper_workloads():
    """The 16 Mega-GPT-2/T-NLG configs, then the 12 TP-32 configs, at the default T."""
    return [Workload(model=m, tp=tp, sublayer=s, tokens=default_tokens(m))
            for m, tps in _TP_OF.items() for tp in tps for s in SUBLAYERS]


def token_sweep(*, model="T-NLG", tp=8, tokens=(2048, 4096, 8192, 16384)):
    """Workloads of every sub-layer of ``model`` at ``tp`` for each T in ``tokens``."""
    return [Workload(model=model, tp=tp, sublayer=s, tokens=t) for t in tokens for s in SUBLAYERS]
