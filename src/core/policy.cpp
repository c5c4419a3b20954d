#include "core/policy.h"

#include <algorithm>

namespace pipespin {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// What a (measuring or exploit) epoch counts about its spins.
void new_epoch_of_spins(PolicyState& s) noexcept {
    s.long_waits.store(0, kRelaxed);
    s.close_misses.store(0, kRelaxed);
    s.epoch_hit.store(0, kRelaxed);
    s.delay_looks.store(0, kRelaxed);
    s.try_watched.store(0, kRelaxed);
}

void start_phase(PolicyState& s, Phase phase, std::uint16_t exploit_epochs) noexcept {
    s.phase.store(static_cast<std::uint8_t>(phase), kRelaxed);
    s.exploit_left.store(exploit_epochs, kRelaxed);
    new_epoch_of_spins(s);
}

// Cost of an epoch in ns per KiB moved: lower is better.
std::uint64_t epoch_cost(std::uint64_t elapsed_ns, std::uint64_t bytes) noexcept {
    return elapsed_ns * 1024 / std::max<std::uint64_t>(bytes, 1);
}

// PolicyState::plain_call_ns while a run of not spinning has no base for
// its drift check yet (kDriftFactor): its first epoch, timed, sets it
// (count_early_learning()). Measured values saturate below it.
constexpr std::uint32_t kBasePending = UINT32_MAX;

// Wall time per call over an epoch, saturating.
std::uint32_t per_call_ns(std::uint64_t elapsed_ns, std::uint32_t calls) noexcept {
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(elapsed_ns / std::max<std::uint32_t>(calls, 1), kBasePending - 1));
}

// Both experiments are in: exploit the winner. Spinning must win by a
// margin, since it also costs CPU; a tie goes to not spinning. `clear`: the
// loser cost kEarlyFactor times the winner's or more.
void decide(PolicyState& s, bool spin_wins, bool clear = false) noexcept {
    const Phase winner = spin_wins ? Phase::Spin : Phase::Plain;
    // The same winner as last time: trust it longer before asking again,
    // kClearGrowth times as long when it won clearly.
    const bool confirmed = s.last_winner.load(kRelaxed) == static_cast<std::uint8_t>(winner);
    const std::uint16_t max = spin_wins ? SpinPolicy::kExploitMaxSpin : SpinPolicy::kExploitMax;
    const std::uint32_t grown =
        std::uint32_t{s.exploit_len.load(kRelaxed)} * (clear ? SpinPolicy::kClearGrowth : 2);
    const std::uint16_t len = confirmed
                                  ? static_cast<std::uint16_t>(std::min<std::uint32_t>(grown, max))
                                  : SpinPolicy::kExploitMin;
    s.exploit_len.store(len, kRelaxed);
    s.last_winner.store(static_cast<std::uint8_t>(winner), kRelaxed);
    start_phase(s, winner, len);
}

// The two epochs of the experiment, as against the runs that exploit its
// winner (Spin, Plain).
bool measuring(Phase phase) noexcept {
    return phase == Phase::TrySpin || phase == Phase::TryPlain;
}

// An exploit epoch is over: one fewer left, or measure again.
void end_exploit_epoch(PolicyState& s) noexcept {
    const std::uint16_t left = s.exploit_left.load(kRelaxed);
    if (left > 1) {
        s.exploit_left.store(left - 1, kRelaxed);
        new_epoch_of_spins(s);
    } else {
        start_phase(s, Phase::TrySpin, 0);  // ask again: the workload may have changed
    }
}

void decide(PolicyState& s) noexcept {
    const std::uint64_t spin = s.cost_spin.load(kRelaxed);
    const std::uint64_t plain = s.cost_plain.load(kRelaxed);
    const bool spin_wins = spin * (100 + SpinPolicy::kMarginPct) < plain * 100;
    const std::uint64_t won = spin_wins ? spin : plain, lost = spin_wins ? plain : spin;
    decide(s, spin_wins, lost >= SpinPolicy::kEarlyFactor * won);
}

void note_wait(PolicyState& s) noexcept {
    const std::uint8_t n = s.epoch_waits.load(kRelaxed);
    if (n != UINT8_MAX) s.epoch_waits.store(n + 1, kRelaxed);
}

// The next call starts a new epoch (on_call() starts its clock).
void next_epoch_from_scratch(PolicyState& s) noexcept {
    s.epoch_calls.store(0, kRelaxed);
    s.epoch_waits.store(0, kRelaxed);
}

// A fresh fd has had its first waits: its own experiment starts at once,
// spinning first, if one of those waits was (or would have been) caught;
// otherwise after kFreshPlainEpochs epochs of not spinning (a sparse
// peer's fd then pays its first spins an epoch later, if it lives that
// long).
void leave_fresh(PolicyState& s) noexcept {
    next_epoch_from_scratch(s);
    if (s.fresh_hits.load(kRelaxed) != 0) {
        start_phase(s, Phase::TrySpin, 0);
    } else {
        decide(s, false);  // its waits were long: a run of not spinning before it measures,
        s.exploit_left.store(SpinPolicy::kFreshPlainEpochs, kRelaxed);  // a short one
    }
}

// One more call on a fresh fd (the Fresh phase counts calls, never time).
void fresh_call(PolicyState& s) noexcept {
    const std::uint32_t calls = s.epoch_calls.load(kRelaxed) + 1;
    if (calls >= SpinPolicy::kEarlyCalls && s.fresh_waits.load(kRelaxed) == 0) {
        // Not a wait by now: spinning cannot matter to this fd.
        next_epoch_from_scratch(s);
        decide(s, false);
    } else if (calls >= SpinPolicy::kEpochCalls) {
        leave_fresh(s);
    } else {
        s.epoch_calls.store(calls, kRelaxed);
    }
}

void fresh_wait(PolicyState& s, bool sampled, bool would_hit) noexcept {
    note_wait(s);
    const std::uint8_t waits = s.fresh_waits.load(kRelaxed) + 1;
    s.fresh_waits.store(waits, kRelaxed);
    if (sampled && would_hit) s.fresh_hits.store(s.fresh_hits.load(kRelaxed) + 1, kRelaxed);
    if (waits >= SpinPolicy::kFreshWaits) leave_fresh(s);
}

// Every first wait of the fd was long (none was, or would have been, caught
// by a spin) and spinning has not won on it since.
bool slow_from_start(const PolicyState& s) noexcept {
    return s.fresh_waits.load(kRelaxed) >= SpinPolicy::kFreshWaits &&
           s.fresh_hits.load(kRelaxed) == 0 &&
           s.last_winner.load(kRelaxed) != static_cast<std::uint8_t>(Phase::Spin);
}

// The peer took far longer than the spin had (kLongWaitFactor).
// `allowance_ns`: what the wait may take on top (a watched wait's own
// sleep and wake-up, SpinPolicy::kSlowWakeNs).
bool is_long_wait(const WaitObservation& o, std::uint64_t allowance_ns = 0) noexcept {
    return o.spin_ns + o.block_ns >
           SpinPolicy::kLongWaitFactor * std::max<std::uint64_t>(o.budget_ns, 1) + allowance_ns;
}

// A TrySpin epoch caught nothing and its wait `o` outlasted the budget:
// not spinning wins at once (on_wait() says why), and what a call costs not
// spinning is about this wait (the drift check's base, kDriftFactor).
void lost_to_slow_peer(PolicyState& s, const WaitObservation& o) noexcept {
    s.plain_call_ns.store(static_cast<std::uint32_t>(
                              std::min<std::uint64_t>(o.spin_ns + o.block_ns, kBasePending - 1)),
                          kRelaxed);
    next_epoch_from_scratch(s);
    decide(s, false);
}

// A TrySpin epoch caught nothing, and its spins kept a peer on this CPU
// from running (kCloseMissLimit close misses): not spinning wins at once.
// The rest of the epoch would not spin, so it and a TryPlain epoch after it
// would only measure not spinning twice, each call on the engine's full
// path (a co-located ping-pong paid 128 such calls a side per measuring
// pair, 0.3 µs a round trip over them). The drift check's base, what a
// call costs not spinning here, is the run's first epoch (kBasePending).
// A clear win: a spin that holds its peer's CPU adds its looks and a yield
// to the switch, about twice a plain round trip, so a repeat is trusted
// kClearGrowth times longer (4, 16, 64 epochs); a pair that moves apart
// meanwhile is the drift check's to see.
void lost_to_peer_on_this_cpu(PolicyState& s) noexcept {
    s.plain_call_ns.store(kBasePending, kRelaxed);
    next_epoch_from_scratch(s);
    decide(s, false, true);
}

template <class T>
void store_if_changed(std::atomic<T>& a, T v) noexcept {
    if (a.load(kRelaxed) != v) a.store(v, kRelaxed);
}

}  // namespace

void PolicyState::relearn() noexcept {
#define PIPESPIN_FIELD(type, name, what) store_if_changed<type>(name, 0);
    PIPESPIN_POLICY_FIELDS(PIPESPIN_FIELD)
#undef PIPESPIN_FIELD
}

void PolicyState::reset() noexcept {
    relearn();
    store_if_changed(hint, kHintNone);
}

void PolicyState::copy_from(const PolicyState& o) noexcept {
#define PIPESPIN_FIELD(type, name, what) store_if_changed<type>(name, o.name.load(kRelaxed));
    PIPESPIN_POLICY_FIELDS(PIPESPIN_FIELD)
#undef PIPESPIN_FIELD
    store_if_changed(hint, o.hint.load(kRelaxed));
}

void PolicyState::set_hint(std::uint32_t h) noexcept {
    if (hint.load(kRelaxed) == h) return;
    relearn();
    hint.store(h, kRelaxed);
}

void FreshPrior::Lane::observe(bool would_hit) noexcept {
    // Written only when it changes: a shell's parent sits at the floor,
    // and a write after each fork is a copy-on-write fault on the page.
    const int v = score.load(kRelaxed) + (would_hit ? kHitGain : -kMissCost);
    store_if_changed<std::int8_t>(
        score, static_cast<std::int8_t>(std::clamp<int>(v, -kScoreMax, kScoreMax)));
}

void FreshPrior::made_pipe_closed(std::uint64_t calls) noexcept {
    if (calls == 0 || calls > kOneShotCalls) return;
    // Written only when it changes: a shell's parent sits at the floor.
    const int v = life_.load(kRelaxed) - 1;
    store_if_changed<std::int8_t>(life_, static_cast<std::int8_t>(std::max<int>(v, -kScoreMax)));
}

void FreshPrior::made_pipe_lives() noexcept {
    store_if_changed<std::int8_t>(life_, 0);
}

void FreshPrior::reset() noexcept {
    for (auto& origin : lanes_)
        for (Lane& l : origin) store_if_changed<std::int8_t>(l.score, 0);
    store_if_changed<std::int8_t>(life_, 0);
}

std::uint64_t WakeEstimate::get(std::uint64_t ceiling_ns) const noexcept {
    std::uint64_t v = ns_.load(kRelaxed);
    return v == 0 ? ceiling_ns : std::min(v, ceiling_ns);
}

void WakeEstimate::observe(std::uint64_t block_ns, std::uint64_t ceiling_ns) noexcept {
    // An exponentially weighted mean (alpha = 1/8, as glibc's adaptive
    // mutex) of how long a real call blocked after a missed spin, clipped at
    // the ceiling so that one long sleep cannot swamp it.
    const std::uint64_t sample = std::max<std::uint64_t>(std::min(block_ns, ceiling_ns), 1);
    std::uint64_t v = ns_.load(kRelaxed);
    std::uint64_t next = v == 0 ? sample : v - v / 8 + sample / 8;
    store_if_changed<std::uint64_t>(ns_, std::max<std::uint64_t>(next, 1));
}

std::uint64_t SpinPolicy::spin_ns(const PolicyParams& p, const WakeEstimate& wake) noexcept {
    // Spinning longer than a sleep and wake-up cost buys nothing: at about
    // that length a spin is within 2x of the best choice in hindsight.
    // Twice the estimate (plus a little) leaves room for its noise.
    return std::min(p.max_spin_ns, 2 * wake.get(p.max_spin_ns) + 2'000);
}

std::uint64_t SpinPolicy::budget_ns(const PolicyState& s, const PolicyParams& p,
                                    const WakeEstimate& wake,
                                    const FreshPrior::Lane& lane) noexcept {
    if (p.mode == Mode::Off || p.usable_cpus < 2 || p.max_spin_ns == 0 || p.thread_off) return 0;
    if (const std::uint32_t h = s.hint.load(kRelaxed); h != kHintNone) [[unlikely]]
        return h == kHintNever ? 0 : h;
    if (p.mode == Mode::Fixed) return p.max_spin_ns;
    if (p.oversubscribed) return 0;
    const Phase phase = s.get_phase();
    if (phase == Phase::Fresh) return lane.spins() ? spin_ns(p, wake) : kWatchOnly;
    if (phase == Phase::TryPlain || phase == Phase::Plain) return 0;
    if (s.long_waits.load(kRelaxed) >= kLongWaitLimit) return 0;
    // A fd slow from its start measures its TrySpin epoch's first wait
    // without a spin, as its first waits were: whether that wait outlasts
    // kLongWaitFactor budgets shows in the real call's time alone (a spin
    // that missed plus the block after it take what the block alone
    // takes, give or take a wake-up: kSlowWakeNs), and where it does the
    // spin would only have burnt its budget (a sparse producer's consumer
    // paid spin_us once an exploit run, 0.1 µs a read over its first 500
    // reads). Its later waits spin.
    if (phase == Phase::TrySpin && s.try_watched.load(kRelaxed) == 0 && slow_from_start(s))
        return kWatchOnly;
    return spin_ns(p, wake);
}

void SpinPolicy::on_call_learning(PolicyState& s, std::uint64_t bytes, NowFn now) noexcept {
    const Phase phase = s.get_phase();
    if (phase == Phase::Fresh) {
        fresh_call(s);
        return;
    }
    const std::uint32_t calls = s.epoch_calls.load(kRelaxed) + 1;
    if (calls == 1) {
        // The epoch's clock starts at the end of its first call: what that
        // call moved is not part of the epoch either.
        s.epoch_start_ns.store(now(), kRelaxed);
        s.epoch_bytes.store(0, kRelaxed);
        s.epoch_waits.store(0, kRelaxed);
        s.epoch_calls.store(calls, kRelaxed);
        return;
    }
    const std::uint64_t epoch_bytes = s.epoch_bytes.load(kRelaxed) + bytes;
    s.epoch_bytes.store(epoch_bytes, kRelaxed);
    // A measuring epoch looks at its running cost after kEarlyCalls calls
    // and at each doubling (a clock read each), to end early once it has
    // clearly lost (below).
    const bool look_early = measuring(phase) && calls >= kEarlyCalls &&
                            (calls & (calls - 1)) == 0 && calls < kEpochCalls;
    if (calls < kEpochCalls && !look_early) {
        s.epoch_calls.store(calls, kRelaxed);
        return;
    }
    const std::uint64_t t = now();
    const std::uint64_t elapsed = t - s.epoch_start_ns.load(kRelaxed);
    const std::uint64_t cost = epoch_cost(elapsed, epoch_bytes);
    const bool never_waited = phase == Phase::TrySpin && s.epoch_waits.load(kRelaxed) == 0;
    if (calls < kEpochCalls && !never_waited) {
        // The other way's last cost is known and this epoch already costs
        // kEarlyFactor times as much: finishing it would only pay more of
        // that price (a ping-pong's TryPlain epoch sleeps on every call).
        const std::uint64_t other =
            (phase == Phase::TrySpin ? s.cost_plain : s.cost_spin).load(kRelaxed);
        if (other == 0 || cost <= kEarlyFactor * other) {
            s.epoch_calls.store(calls, kRelaxed);
            return;
        }
    }
    // The epoch is over.
    s.epoch_calls.store(1, kRelaxed);
    s.epoch_bytes.store(0, kRelaxed);
    s.epoch_start_ns.store(t, kRelaxed);
    s.epoch_waits.store(0, kRelaxed);

    switch (phase) {
        case Phase::TrySpin:
            s.cost_spin.store(cost, kRelaxed);
            if (never_waited) {
                // It ran as a plain epoch would: what a call costs not spinning.
                s.plain_call_ns.store(per_call_ns(elapsed, calls - 1), kRelaxed);
                decide(s, false);  // nothing to measure against
                break;
            }
            start_phase(s, Phase::TryPlain, 0);
            break;
        case Phase::TryPlain:
            s.cost_plain.store(cost, kRelaxed);
            s.plain_call_ns.store(per_call_ns(elapsed, calls - 1), kRelaxed);
            decide(s);
            break;
        case Phase::Spin:
        case Phase::Plain:
            end_exploit_epoch(s);
            break;
        case Phase::Fresh:  // handled above
            break;
    }
}

bool SpinPolicy::measures(const PolicyState& s, const PolicyParams& p) noexcept {
    return learns(s, p) && measuring(s.get_phase());
}

bool SpinPolicy::count_early_learning(PolicyState& s, NowFn now) noexcept {
    const Phase phase = s.get_phase();
    if (measuring(phase)) return false;
    if (phase == Phase::Fresh) {
        fresh_call(s);
        return true;
    }
    const std::uint32_t calls = s.epoch_calls.load(kRelaxed) + 1;
    // A Plain epoch is timed from its first call to its last (both before
    // the real call: kEpochCalls - 1 calls in between), to see whether not
    // spinning still costs what it cost when it won (kDriftFactor).
    const bool timed = phase == Phase::Plain && s.plain_call_ns.load(kRelaxed) != 0;
    if (calls < kEpochCalls) {
        if (calls == 1 && timed) s.epoch_start_ns.store(now(), kRelaxed);
        s.epoch_calls.store(calls, kRelaxed);
        return true;
    }
    // The next epoch starts with the next call, which on_call() times if
    // that epoch measures.
    s.epoch_calls.store(0, kRelaxed);
    const std::uint64_t t = timed ? now() : 0;
    const std::uint32_t per_call =
        timed ? per_call_ns(t - s.epoch_start_ns.load(kRelaxed), calls - 1) : 0;
    const std::uint32_t base = s.plain_call_ns.load(kRelaxed);
    if (timed && base == kBasePending) {
        s.plain_call_ns.store(per_call, kRelaxed);  // the run's first epoch: the base
    } else if (timed && per_call > kDriftFactor * base) {
        // The decision is stale: measure again, both ways in full (the old
        // plain cost must not end the TrySpin epoch early).
        s.cost_plain.store(0, kRelaxed);
        start_phase(s, Phase::TrySpin, 0);
        return true;
    }
    end_exploit_epoch(s);
    // A run of not spinning that goes on: this call is also the next
    // epoch's first, its clock started with the same reading (as a
    // measuring epoch's last call starts the next one in on_call()), so
    // that a stream leaves the engine's fast lane once an epoch
    // (inline_run()), not twice.
    if (phase == Phase::Plain && s.get_phase() == Phase::Plain) {
        s.epoch_calls.store(1, kRelaxed);
        if (timed) s.epoch_start_ns.store(t, kRelaxed);
    }
    return true;
}

void SpinPolicy::on_no_cpu(PolicyState& s) noexcept {
    if (s.get_phase() == Phase::Fresh) {
        fresh_wait(s, false, false);  // a wait, but nothing learnt from it
        return;
    }
    note_wait(s);
    s.long_waits.store(kLongWaitLimit, kRelaxed);
}

bool SpinPolicy::looks_at_run_delay(PolicyState& s, const PolicyParams& p) noexcept {
    if (!learns(s, p)) return false;
    const Phase phase = s.get_phase();
    if (phase != Phase::TrySpin && phase != Phase::Spin) return false;
    if (s.epoch_hit.load(kRelaxed) != 0) return false;
    const std::uint8_t n = s.delay_looks.load(kRelaxed);
    if (n >= kRunDelayLooks) return false;
    s.delay_looks.store(n + 1, kRelaxed);
    return true;
}

bool SpinPolicy::run_delay_matters(const WaitObservation& o) noexcept {
    return o.spun && !o.spin_hit && !is_long_wait(o) && o.block_ns >= o.spin_ns;
}

void SpinPolicy::on_wait_learning(PolicyState& s, const PolicyParams& p, WakeEstimate& wake,
                                  const WaitObservation& o, FreshPrior::Lane* lane) noexcept {
    if (s.get_phase() == Phase::Fresh) {
        if (!o.spun && !o.watched) return;
        // Watched: a spin with the budget it would have had catches the
        // data exactly when the real call returned within that budget.
        // A spin that caught its answer only once its yield had run another
        // task (the peer, on this CPU) caught nothing a spin can.
        const bool would_hit = o.spun ? o.spin_hit && !o.gave_cpu : o.block_ns <= o.budget_ns;
        if (lane != nullptr) lane->observe(would_hit);
        if (o.spun && !o.spin_hit) wake.observe(o.block_ns, p.max_spin_ns);
        fresh_wait(s, true, would_hit);
        return;
    }
    if (!o.spun) {
        // A TrySpin epoch's first wait, watched (budget_ns()): outlasted
        // as a spin would have been, it settles the epoch as that spin's
        // miss would (below); otherwise the epoch's next waits spin.
        if (!o.watched || s.get_phase() != Phase::TrySpin) return;
        s.try_watched.store(1, kRelaxed);
        note_wait(s);
        if (is_long_wait(o, kSlowWakeNs)) lost_to_slow_peer(s, o);
        return;
    }
    note_wait(s);
    if (o.spin_hit && !o.gave_cpu) {
        s.epoch_hit.store(1, kRelaxed);
        return;
    }
    if (!o.spin_hit) wake.observe(o.block_ns, p.max_spin_ns);
    // Two ways a spin is wasted (docs/policy.md, part 2). The peer took far
    // longer than the spin: spinning on this fd only burns CPU. Or the peer
    // needed this thread's CPU (the scheduler put both ends on one), and a
    // spin only keeps it from running: it answered as soon as the spin gave
    // up (the real call blocked for less than the spin had lasted), or this
    // thread, woken, waited for its CPU through most of the block (both
    // ends spinning: kRunDelayLooks), or the spin's yield ran another task
    // (engine_detail.h, kYieldAt: the peer answered while this thread gave
    // its CPU away, or some other task needed it); again and again without
    // a hit. After a few such waits stop spinning for the rest of the
    // epoch; if spinning was being exploited, measure both ways again at
    // once (below).
    const bool long_wait = !o.spin_hit && is_long_wait(o);
    bool close_miss_limit = false;
    if (!long_wait && (o.gave_cpu || o.block_ns < o.spin_ns ||
                       (o.run_delay_known && 2 * o.run_delay_ns > o.block_ns))) {
        const std::uint8_t c = s.close_misses.load(kRelaxed);
        if (c != UINT8_MAX) s.close_misses.store(c + 1, kRelaxed);
        // One caught after its yield while spinning is exploited: kYieldHitLimit.
        const std::uint8_t limit =
            o.spin_hit && s.get_phase() == Phase::Spin ? kYieldHitLimit : kCloseMissLimit;
        close_miss_limit = c + 1 >= limit && s.epoch_hit.load(kRelaxed) == 0;
    }
    if (long_wait || close_miss_limit) {
        const std::uint8_t n = close_miss_limit
                                   ? kLongWaitLimit
                                   : static_cast<std::uint8_t>(s.long_waits.load(kRelaxed) + 1);
        s.long_waits.store(n, kRelaxed);
        // A fd slow from its start (its first waits were all long) on
        // which spinning never won: one outlasted spin settles a TrySpin
        // epoch, the second would only pay another budget for what the
        // first waits said already (a sparse producer's consumer paid 2 x
        // spin_us at its start, 0.2 µs a read over its first 500 reads).
        const std::uint8_t limit = slow_from_start(s) ? 1 : kLongWaitLimit;
        if (long_wait && n >= limit && s.get_phase() == Phase::TrySpin &&
            s.epoch_hit.load(kRelaxed) == 0) {
            // Spinning has lost this epoch to a slow peer: it caught
            // nothing and stops for the rest of it, which would only
            // measure not spinning, what TryPlain is for (a sparse peer's
            // fd paid a pair of epochs counted after each call, half its
            // calls, for a verdict known here). Not spinning wins at once,
            // as a TrySpin epoch without waits does, a repeat when it won
            // before; what a call costs not spinning is about this wait
            // (the drift check's base, kDriftFactor).
            lost_to_slow_peer(s, o);
        } else if (close_miss_limit && s.get_phase() == Phase::TrySpin) {
            lost_to_peer_on_this_cpu(s);  // the same, for a peer on this CPU
        } else if (n >= kLongWaitLimit && s.get_phase() == Phase::Spin) {
            // Measure again, now: a run of not spinning would last at
            // least kExploitMin epochs whatever the pair costs now. Two
            // waits the host stretched (a virtual CPU preempted for a few
            // hundred µs) put a spread ping-pong through 256 cross-CPU
            // round trips, 17 ms at 66 µs; the measuring pair costs such
            // a ping-pong a TryPlain epoch ended early (8 sleeps), and a
            // peer that did turn slow two more spins. The trust the
            // winner earned stays: if spinning wins again its run grows.
            next_epoch_from_scratch(s);  // its first epoch is timed from its first call
            start_phase(s, Phase::TrySpin, 0);
        }
    }
}

bool RunQueueGate::host_oversubscribed(std::uint64_t now, int usable_cpus,
                                       RunningFn running) noexcept {
    std::uint64_t next = next_ns.load(std::memory_order_relaxed);
    if (now < next ||
        !next_ns.compare_exchange_strong(next, now + kPeriodNs, std::memory_order_relaxed))
        return over_looks.load(std::memory_order_relaxed) >= kConfirmLooks;
    // Only the thread that won the slot writes: no other update to lose.
    std::uint8_t n = over_looks.load(std::memory_order_relaxed);
    const long r = running();
    if (r > 2L * usable_cpus)
        n = kConfirmLooks;  // far more than a passing task: at once
    else
        n = r > usable_cpus ? std::min<std::uint8_t>(n + 1, kConfirmLooks) : 0;
    over_looks.store(n, std::memory_order_relaxed);
    return n >= kConfirmLooks;
}

}  // namespace pipespin
