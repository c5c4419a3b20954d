#include "core/stats.h"

#include "core/ascii.h"

namespace pipespin {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// A store only where there is something to clear: after fork() a store into
// a page the child shares with its parent costs a copy-on-write fault.
void zero(std::atomic<std::uint64_t>& a) noexcept {
    if (a.load(kRelaxed) != 0) a.store(0, kRelaxed);
}

// A bounded JSON writer into a fixed buffer. Its own number formatting (no
// snprintf): the line may be rendered in a signal handler or a vfork child.
// Once something did not fit, `overflow` stays set and nothing more is added.
struct Json {
    char* buf;
    std::size_t cap;  // usable bytes (one is kept for the NUL)
    std::size_t len = 0;
    bool overflow = false;

    void raw(std::string_view s) noexcept {
        if (overflow) return;
        if (len + s.size() > cap) {
            overflow = true;
            return;
        }
        __builtin_memcpy(buf + len, s.data(), s.size());
        len += s.size();
    }
    void ch(char c) noexcept { raw(std::string_view(&c, 1)); }
    void num(std::uint64_t v) noexcept {
        ascii::Digits digits;
        raw(ascii::uint_text(v, digits));
    }
    void snum(std::int64_t v) noexcept {
        if (v < 0) {
            ch('-');
            num(static_cast<std::uint64_t>(-(v + 1)) + 1);
        } else {
            num(static_cast<std::uint64_t>(v));
        }
    }
    // A string literal, escaped; at most `limit` input bytes.
    void str(std::string_view s, std::size_t limit = 256) noexcept {
        static constexpr char kHex[] = "0123456789abcdef";
        ch('"');
        if (s.size() > limit) s = s.substr(0, limit);
        for (char c : s) {
            const auto u = static_cast<unsigned char>(c);
            if (c == '"' || c == '\\') {
                ch('\\');
                ch(c);
            } else if (u < 0x20 || u == 0x7f) {
                char esc[6] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
                raw(std::string_view(esc, 6));
            } else {
                ch(c);  // UTF-8 passes through as is
            }
        }
        ch('"');
    }
    void key(std::string_view k) noexcept {
        str(k);
        ch(':');
    }
};

std::size_t cstr_len(const char* s, std::size_t max) noexcept {
    std::size_t n = 0;
    while (n < max && s[n] != '\0') ++n;
    return n;
}

// Every counter of counters.def, in its order: "calls":N,"waits":N,...
void counters(Json& j, const Counters& c) noexcept {
    bool first = true;
    auto one = [&](std::string_view name, std::uint64_t v) noexcept {
        if (!first) j.ch(',');
        first = false;
        j.key(name);
        j.num(v);
    };
#define PIPESPIN_COUNTER(name, help) one(#name, c.name);
#define PIPESPIN_DERIVED_COUNTER(name, expr, help) one(#name, c.name());
#include "core/counters.def"
}

// Per end: the summed ns, then (with buckets) the histogram without its
// trailing empty buckets.
void waits(Json& j, const WaitHists& w, bool buckets) noexcept {
    j.raw(",\"wait_ns\":{");
    for (int e = 0; e < kWaitEnds; ++e) {
        if (e) j.ch(',');
        j.key(wait_end_name(static_cast<WaitEnd>(e)));
        j.num(w[e].ns);
    }
    j.ch('}');
    if (!buckets) return;
    j.raw(",\"wait_log2\":{");
    for (int e = 0; e < kWaitEnds; ++e) {
        if (e) j.ch(',');
        j.key(wait_end_name(static_cast<WaitEnd>(e)));
        int used = kWaitBuckets;
        while (used > 0 && w[e].n[used - 1] == 0) --used;
        j.ch('[');
        for (int b = 0; b < used; ++b) {
            if (b) j.ch(',');
            j.num(w[e].n[b]);
        }
        j.ch(']');
    }
    j.ch('}');
}

void rusage(Json& j, const Rusage& ru) noexcept {
    j.raw(",\"rusage\":{\"utime_us\":");
    j.num(ru.utime_us);
    j.raw(",\"stime_us\":");
    j.num(ru.stime_us);
    j.raw(",\"nvcsw\":");
    j.num(ru.nvcsw);
    j.raw(",\"nivcsw\":");
    j.num(ru.nivcsw);
    j.raw(",\"maxrss_kb\":");
    j.num(ru.maxrss_kb);
    j.ch('}');
}

void config(Json& j, const Options& o, bool texts) noexcept {
    j.ch('{');
    bool first = true;
    for (const OptionSpec& spec : option_table()) {
        if (spec.kind == OptionKind::Text && !texts) continue;
        if (!first) j.ch(',');
        first = false;
        j.key(spec.name);
        char value[sizeof(TextValue::s)];
        format_option_into(spec, o, value, sizeof value);
        if (spec.kind == OptionKind::Number)
            j.raw(value);
        else
            j.str(value);
    }
    j.ch('}');
}

// How much of a line is kept (render_stats_line tries them in this order).
enum class Keep : std::uint8_t { All, NoTexts, NoBuckets };

void render(Json& j, const StatsHeader& h, const Options& o, const StatsSnapshot& s,
            Keep keep) noexcept {
    const bool texts = keep == Keep::All;
    j.raw("{\"v\":");
    j.num(kStatsLineVersion);
    j.raw(",\"pid\":");
    j.snum(h.pid);
    j.raw(",\"ppid\":");
    j.snum(h.ppid);
    j.raw(",\"program\":");
    j.str(std::string_view(h.program, cstr_len(h.program, 255)), texts ? 255 : 64);
    j.raw(",\"event\":");
    j.str(event_name(h.event));
    j.raw(",\"arm\":");
    j.str(arm_name(h.arm));
    j.raw(",\"seq\":");
    j.num(h.seq);
    j.raw(",\"start_us\":");
    j.num(h.start_unix_us);
    j.raw(",\"wall_us\":");
    j.num(h.wall_us);
    rusage(j, h.ru);
    j.raw(",\"sleeps_avoided\":");
    j.num(s.total().spin_hits);
    if (!texts) j.raw(",\"truncated\":true");
    j.raw(",\"config\":");
    config(j, o, texts);
    for (int k = 0; k < kStatKinds; ++k) {
        j.ch(',');
        j.key(kind_name(static_cast<StatKind>(k)));
        j.ch('{');
        for (int d = 0; d < kStatDirs; ++d) {
            if (d) j.ch(',');
            j.key(dir_name(static_cast<StatDir>(d)));
            j.ch('{');
            counters(j, s.c[k][d]);
            waits(j, s.wait[k][d], keep != Keep::NoBuckets);
            j.ch('}');
        }
        j.ch('}');
    }
    // Spins per hook family: which hooks engaged.
    j.raw(",\"via\":{");
    for (int v = 0; v < kViaCount; ++v) {
        if (v) j.ch(',');
        j.key(via_name(static_cast<Via>(v)));
        j.raw("{\"spins\":");
        j.num(s.via[v].spins);
        j.raw(",\"spin_hits\":");
        j.num(s.via[v].spin_hits);
        j.ch('}');
    }
    j.raw("}}\n");
}

// splitmix64's finaliser: every input bit moves every output bit.
std::uint64_t splitmix64(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

Counters& Counters::operator+=(const Counters& o) noexcept {
#define PIPESPIN_COUNTER(name, help) name += o.name;
#include "core/counters.def"
    return *this;
}

Counters IoCounters::load() const noexcept {
    Counters c;
#define PIPESPIN_COUNTER(name, help) c.name = name.load(kRelaxed);
#include "core/counters.def"
    // Read without a lock while other threads count: a hit may be seen
    // before its spin. Keep the snapshot consistent with itself.
    if (c.spin_hits > c.spins) c.spins = c.spin_hits;
    return c;
}

Counters IoCounters::take() noexcept {
    // Only what is there: an untouched slot costs loads, not locked exchanges.
    auto move = [](std::atomic<std::uint64_t>& a) noexcept -> std::uint64_t {
        return a.load(kRelaxed) != 0 ? a.exchange(0, kRelaxed) : 0;
    };
    Counters c;
#define PIPESPIN_COUNTER(name, help) c.name = move(name);
#include "core/counters.def"
    return c;
}

void IoCounters::add(const Counters& c) noexcept {
    auto add1 = [](std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept {
        if (v != 0) a.fetch_add(v, kRelaxed);
    };
#define PIPESPIN_COUNTER(name, help) add1(name, c.name);
#include "core/counters.def"
}

void IoCounters::clear() noexcept {
    // Stores only where there is something to clear: after fork() a store
    // into a page the child shares with its parent costs a copy-on-write
    // fault (10-20 µs in a VM), and most slots were never counted in.
#define PIPESPIN_COUNTER(name, help) zero(name);
#include "core/counters.def"
}

Counters StatsSnapshot::total(StatDir d) const noexcept {
    Counters t;
    for (int k = 0; k < kStatKinds; ++k) t += c[k][static_cast<int>(d)];
    return t;
}

Counters StatsSnapshot::total() const noexcept {
    Counters t;
    for (int d = 0; d < kStatDirs; ++d) t += total(static_cast<StatDir>(d));
    return t;
}

void ProcessCounters::count_via(Via v, bool hit) noexcept {
    ViaCounters& vc = via[static_cast<int>(v)];
    vc.spins.fetch_add(1, kRelaxed);
    if (hit) vc.spin_hits.fetch_add(1, kRelaxed);
}

void ProcessCounters::count_wait(StatKind k, StatDir d, WaitEnd e, std::uint64_t ns) noexcept {
    WaitCounters& w = wait[static_cast<int>(k)][static_cast<int>(d)][static_cast<int>(e)];
    w.n[wait_bucket(ns)].fetch_add(1, kRelaxed);
    w.ns.fetch_add(ns, kRelaxed);
}

void ProcessCounters::add_to(StatsSnapshot& s) const noexcept {
    for (int k = 0; k < kStatKinds; ++k)
        for (int d = 0; d < kStatDirs; ++d) s.c[k][d] += c[k][d].load();
    for (int v = 0; v < kViaCount; ++v) {
        ViaCount& out = s.via[v];
        out.spins += via[v].spins.load(kRelaxed);
        out.spin_hits += via[v].spin_hits.load(kRelaxed);
        if (out.spin_hits > out.spins) out.spins = out.spin_hits;  // read while counting
    }
    for (int k = 0; k < kStatKinds; ++k)
        for (int d = 0; d < kStatDirs; ++d)
            for (int e = 0; e < kWaitEnds; ++e) {
                const WaitCounters& in = wait[k][d][e];
                WaitHist& out = s.wait[k][d][e];
                for (int b = 0; b < kWaitBuckets; ++b) out.n[b] += in.n[b].load(kRelaxed);
                out.ns += in.ns.load(kRelaxed);
            }
}

void ProcessCounters::clear() noexcept {
    for (auto& kind : c)
        for (auto& dir : kind) dir.clear();
    for (auto& v : via) {  // only where there is something to clear (IoCounters::clear)
        zero(v.spins);
        zero(v.spin_hits);
    }
    for (auto& kind : wait)
        for (auto& dir : kind)
            for (WaitCounters& w : dir) {
                for (auto& n : w.n) zero(n);
                zero(w.ns);
            }
}

std::string_view kind_name(StatKind k) noexcept {
    return k == StatKind::Fifo ? "fifo" : "pipe";
}

std::string_view dir_name(StatDir d) noexcept {
    switch (d) {
        case StatDir::Read:
            return "read";
        case StatDir::Write:
            return "write";
        case StatDir::Poll:
            return "poll";
    }
    return "?";
}

std::string_view via_name(Via v) noexcept {
    const auto i = static_cast<std::size_t>(v);
    return i < kViaCount ? kViaNames[i] : "?";
}

std::string_view wait_end_name(WaitEnd e) noexcept {
    switch (e) {
        case WaitEnd::Hit:
            return "hit";
        case WaitEnd::Miss:
            return "miss";
        case WaitEnd::Plain:
            return "plain";
    }
    return "?";
}

std::string_view arm_name(Arm a) noexcept {
    switch (a) {
        case Arm::None:
            return "none";
        case Arm::Control:
            return "control";
        case Arm::Treatment:
            return "treatment";
    }
    return "?";
}

std::string_view event_name(StatsEvent e) noexcept {
    switch (e) {
        case StatsEvent::Exit:
            return "exit";
        case StatsEvent::Exec:
            return "exec";
        case StatsEvent::Interval:
            return "interval";
    }
    return "?";
}

Arm draw_arm(std::uint32_t ab, std::uint32_t seed, std::uint32_t pid) noexcept {
    const std::uint64_t h = splitmix64((static_cast<std::uint64_t>(seed) << 32) ^ pid);
    return h % 100 < ab ? Arm::Treatment : Arm::Control;
}

Arm settle_arm(Arm current, bool ab_configured, const Options& o, std::uint32_t pid) noexcept {
    if (!ab_configured) return Arm::None;
    if (current != Arm::None) return current;
    return draw_arm(o.ab, o.ab_seed, pid);
}

Arm arm_at(Arm first, std::uint64_t anchor_ns, std::uint64_t period_ns,
           std::uint64_t now_ns) noexcept {
    if (first == Arm::None || period_ns == 0 || now_ns < anchor_ns) return first;
    if (((now_ns - anchor_ns) / period_ns) % 2 == 0) return first;
    return first == Arm::Control ? Arm::Treatment : Arm::Control;
}

std::uint64_t next_switch_ns(Arm first, std::uint64_t anchor_ns, std::uint64_t period_ns,
                             std::uint64_t now_ns) noexcept {
    if (first == Arm::None || period_ns == 0) return 0;
    if (now_ns < anchor_ns) return anchor_ns + period_ns;
    return anchor_ns + ((now_ns - anchor_ns) / period_ns + 1) * period_ns;
}

void apply_arm(Options& o, Arm arm) noexcept {
    if (arm == Arm::Control) o.mode_v = static_cast<std::uint32_t>(Mode::Off);
}

std::size_t render_stats_line(char* buf, std::size_t size, const StatsHeader& h,
                              const Options& config, const StatsSnapshot& s) noexcept {
    if (size == 0) return 0;
    const std::size_t cap = (size - 1 < kStatsLineMax ? size - 1 : kStatsLineMax);
    for (Keep keep : {Keep::All, Keep::NoTexts, Keep::NoBuckets}) {
        Json j{buf, cap};
        render(j, h, config, s, keep);
        if (!j.overflow) {
            buf[j.len] = '\0';
            return j.len;
        }
    }
    buf[0] = '\0';
    return 0;
}

bool expand_stats_path(std::string_view pattern, std::int64_t pid, char* buf,
                       std::size_t size) noexcept {
    Json j{buf, size == 0 ? 0 : size - 1};
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
            j.snum(pid);
            ++i;
        } else {
            j.ch(pattern[i]);
        }
    }
    if (j.overflow || size == 0) return false;
    buf[j.len] = '\0';
    return true;
}

}  // namespace pipespin
