# SPDX-License-Identifier: Apache-2.0
"""The arbiter's configuration check and T3-MCA's threshold derivation, elaborated into the
:class:`~t3hw.hw.arbiter.Arbiter`'s module (no submodule: the generated Verilog is flat).

Threshold derivation (T3-MCA with ``threshold = 0``)
----------------------------------------------------
The threshold is derived from the compute request rate at the start of the GEMM. After
reset (with ``mca_threshold = 0``) or after a configuration with ``threshold = 0`` is
written, the arbiter waits for the first compute grant; the window is the ``W =
2**window_log2`` cycles starting with that cycle, and ``C`` the compute grants in it. From
the fourth cycle after the window (``FINISH_CYCLES``: the window's last grant is registered,
then an add, then the result is taken, one per cycle, so the computation is never a long
path) the threshold is::

    threshold = ceil(saturation * (W + C) / (2 * W))       (= ceil(q_sat * (1 + rate) / 2))

where ``saturation`` (q_sat) is the occupancy at which the DRAM saturates, its
bandwidth-delay product in requests, and ``rate = C / W`` the compute share of the issue
slots. By Little's law the GEMM alone keeps ``n_gemm = rate * q_sat`` requests in the DRAM,
so this is ``ceil((n_gemm + q_sat) / 2)``: communication may fill the queue halfway from the
GEMM's own level to saturation. The derivation runs whatever the policy; until it ends
(``status.measuring``) T3-MCA grants communication when it is forced (``wait >=
starvation_limit``) and otherwise in the slots compute leaves idle, whatever the occupancy
(compute-first plus the starvation bound: :mod:`t3hw.hw.arbiter`). The hardware accumulates
``saturation << (24 - window_log2)`` per compute grant (no multiplier), so that the division
is a fixed shift; it counts the grants from a register one cycle behind the decision.
"""

from types import SimpleNamespace

from amaranth import *

from t3hw.spec.contract import MAX_WINDOW_LOG2


__all__ = ["config_ok", "derivation_state", "derivation"]


def config_ok(new):
    """Whether the arbiter accepts configuration ``new`` (a view of
    :func:`t3hw.spec.layouts.arbiter_config_layout`): a starvation limit of at least 1, a
    window of at most ``2**MAX_WINDOW_LOG2`` cycles, and a threshold or a saturation to
    derive one from (every policy code is a policy)."""
    return ((new.starvation_limit != 0)
            & (new.window_log2 <= MAX_WINDOW_LOG2)
            & ((new.threshold != 0) | (new.saturation != 0)))


def derivation_state(p, rst_cfg):
    """The threshold derivation's registers, declared (:func:`derivation` drives them), for
    parameters ``p`` and the configuration after reset ``rst_cfg``."""
    # ``measuring``: the threshold is being derived; a register with its own next-state
    # logic, so that the class decision starts from flip-flops. ``armed``: waiting for
    # the first compute grant; ``window``: collecting the window's compute grants;
    # ``finish``: the add and the shift that compute the threshold (:func:`derivation`).
    # The derivation looks at ``grant_c_q``, the compute grant registered, never at the
    # decision itself, so that no derivation register hangs off the decision's path.
    derive = rst_cfg["threshold"] == 0
    measuring = Signal(init=derive)
    armed  = Signal(init=derive)
    window = Signal()
    finish = Signal(2)                                  # one-hot: [0] add, [1] shift
    thr    = Signal(p.occupancy_width, init=rst_cfg["threshold"])
    cw     = MAX_WINDOW_LOG2 + 1
    left   = Signal(signed(cw))                         # window cycles to go, minus 2
    acc    = Signal(p.occupancy_width + MAX_WINDOW_LOG2)   # the grants, scaled (below)
    num    = Signal(p.occupancy_width + MAX_WINDOW_LOG2 + 2, reset_less=True)
    grant_c_q = Signal()                                # a compute grant last cycle
    return SimpleNamespace(derive=derive, measuring=measuring, armed=armed, window=window,
                           finish=finish, thr=thr, cw=cw, left=left, acc=acc, num=num,
                           grant_c_q=grant_c_q)


def derivation(m, p, arb, cfg, rst_cfg, dv, d, set_err):
    """The configuration (checked, then applied) and the threshold derivation; ``status``.

    ``arb`` is the :class:`~t3hw.hw.arbiter.Arbiter` (its ``config`` and ``status``), ``cfg``
    the configuration register, ``dv`` :func:`derivation_state`'s registers, ``d`` the
    decision's signals (``new``, ``accept``, ``grant_c``), ``set_err`` the error events.
    """
    new, accept, cw = d.new, d.accept, dv.cw
    measuring, armed, window, finish, thr, left, acc, num, grant_c_q = (
        dv.measuring, dv.armed, dv.window, dv.finish, dv.thr, dv.left, dv.acc, dv.num,
        dv.grant_c_q)
    m.d.comb += set_err.bad_config.eq(arb.config.valid & ~config_ok(arb.config.payload))
    # The derivation computes ceil(saturation * (W + C) / (2 W)) = X >> (window_log2 + 1)
    # with X = (saturation + 2) W - 1 + saturation C, on X scaled by 2**s, s = 24 -
    # window_log2, so that the division is a fixed shift by 25: ``acc`` adds ``sat_s`` =
    # saturation << s per compute grant (acc = saturation C 2**s), and ``base`` =
    # ((saturation + 2) << 24) - (1 << s) is the rest. In cycles from the first compute
    # grant F (W = 2**window_log2):
    #   F + 1          ``armed`` sees it (``grant_c_q``): acc <- sat_s, left <- W - 3;
    #   F + 2 .. F + W ``window``: the grants of cycles F + 1 .. F + W - 1 are added,
    #                  ``left`` counts down and its sign bit marks the last cycle;
    #   F + W + 1      ``finish[0]``: num <- base + acc;
    #   F + W + 2      ``finish[1]``: thr <- num >> 25; measuring ends.
    # W - 3 for W >= 4 is a thermometer (bits 2 .. window_log2 - 1) plus 1; for W = 2 it
    # is -1; W = 1 skips the window. ``sat_s`` and ``unit`` follow ``cfg`` one registered
    # step behind, ``base`` two: a configuration accepted in cycle t (in ``cfg`` from
    # t + 1) is in ``sat_s`` from t + 2 and in ``base`` from t + 3, while its first window
    # starts at F + 1 >= t + 2 and its earliest add is F + 2 >= t + 3.
    wl = cfg.window_log2
    left_init = Mux(wl == 1, -1, Cat(C(1, 1), C(0, 1), *(wl > i for i in range(2, cw))))
    rst_s = MAX_WINDOW_LOG2 - rst_cfg["window_log2"]
    sat_s = Signal(len(acc), init=rst_cfg["saturation"] << rst_s)
    unit  = Signal(cw, init=1 << rst_s)
    sat2  = Signal(p.occupancy_width + 1, init=rst_cfg["saturation"] + 2)
    base  = Signal(len(num), init=((rst_cfg["saturation"] + 2) << MAX_WINDOW_LOG2)
                                  - (1 << rst_s))
    scale = Signal(range(MAX_WINDOW_LOG2 + 1), init=rst_s)       # s, set with ``cfg``
    m.d.sync += [sat_s.eq(cfg.saturation << scale), unit.eq(1 << scale),
                 sat2.eq(cfg.saturation + 2),
                 base.eq((sat2 << MAX_WINDOW_LOG2) - unit)]
    m.d.sync += grant_c_q.eq(d.grant_c & ~accept)
    with m.If(accept):
        m.d.sync += [cfg.eq(new), thr.eq(new.threshold), measuring.eq(new.threshold == 0),
                     armed.eq(new.threshold == 0), window.eq(0), finish.eq(0),
                     scale.eq(MAX_WINDOW_LOG2 - new.window_log2)]
    with m.Elif(armed & grant_c_q):
        m.d.sync += [armed.eq(0), left.eq(left_init)]
        with m.If(wl == 0):
            m.d.sync += finish.eq(1)
        with m.Else():
            m.d.sync += window.eq(1)
    with m.Elif(window):
        m.d.sync += left.eq(left - 1)
        with m.If(left[-1]):
            m.d.sync += [window.eq(0), finish.eq(1)]
    with m.Elif(finish[0]):
        m.d.sync += [finish.eq(finish << 1), num.eq(base + acc)]
    with m.Elif(finish[1]):
        m.d.sync += [finish.eq(0), measuring.eq(0), thr.eq(num >> (MAX_WINDOW_LOG2 + 1))]
    # ``acc`` outside the chain above, so that its enable is three flip-flops (``accept``
    # does not enter it: an accepted configuration clears ``window`` and ``finish`` and
    # re-arms, and ``acc`` is loaded again before it is read).
    with m.If(grant_c_q):
        with m.If(armed):
            m.d.sync += acc.eq(sat_s)
        with m.Elif(window):
            m.d.sync += acc.eq(acc + sat_s)
    m.d.comb += [arb.status.policy.eq(cfg.policy), arb.status.threshold.eq(thr),
                 arb.status.measuring.eq(measuring)]
