#include "core/options.h"

#include "core/out.h"

namespace pipespin {
namespace {

constexpr std::string_view kModes[] = {"off", "fixed", "adaptive"};
constexpr std::string_view kProbes[] = {"fionread", "poll", "nowait"};
constexpr std::string_view kLevels[] = {"off", "error", "warn", "info", "debug"};

constexpr std::string_view kSwitch[] = {"off", "on"};

constexpr OptionSpec choice(std::string_view name, std::uint32_t Options::*field,
                            std::span<const std::string_view> choices, std::string_view help) {
    return {name, OptionKind::Choice, field, nullptr, choices, 0, 0, "", help};
}
constexpr OptionSpec number(std::string_view name, std::uint32_t Options::*field,
                            std::uint32_t min, std::uint32_t max, std::string_view unit,
                            std::string_view help) {
    return {name, OptionKind::Number, field, nullptr, {}, min, max, unit, help};
}
constexpr OptionSpec text(std::string_view name, TextValue Options::*field,
                          std::string_view accepts, std::string_view help) {
    return {name, OptionKind::Text, nullptr, field, {}, 0, 0, accepts, help};
}

constexpr OptionSpec kTable[] = {
    choice("mode", &Options::mode_v, kModes,
           "off: interpose but never spin (the A/B control arm); fixed: spin up to spin_us "
           "before every blocking pipe wait; adaptive: learn per fd whether spinning pays, "
           "under spin_us (docs/policy.md)"),
    number("spin_us", &Options::spin_us, 0, 1000000, "µs",
           "spin budget per wait (fixed) or its ceiling (adaptive); 0 disables spinning. Raise "
           "it when peers answer in tens of µs (a VM's wake-up costs 20-40 µs); lower it when "
           "CPU time matters more than latency"),
    choice("probe", &Options::probe_v, kProbes,
           "how a spin looks at the pipe: nowait (preadv2/pwritev2 RWF_NOWAIT, then poll), "
           "poll (zero-timeout poll), fionread (ioctl FIONREAD; takes the pipe mutex); leave it "
           "at nowait unless a benchmark on the host says otherwise"),
    choice("spin_read", &Options::spin_read, kSwitch,
           "spin before a read from an empty pipe (read, readv, stdio refills); off when "
           "only the writer side should spin"),
    choice("spin_write", &Options::spin_write, kSwitch,
           "spin before a write into a full pipe (write, writev); off when the reader is "
           "known to be slow"),
    choice("spin_poll", &Options::spin_poll, kSwitch,
           "spin in poll, select and epoll waits that watch a pipe; off for event loops "
           "that mostly wait on sockets"),
    choice("log", &Options::log_v, kLevels,
           "what the shim reports: warnings by default; info adds an exit summary per "
           "process, debug the resolved settings at start-up; off silences even warnings"),
    text("log_file", &Options::log_file, "stderr|PATH",
         "where the shim's messages go: stderr, or a file they are appended to (a regular "
         "file or a terminal, created 0600, never through a symlink; an absolute path in a "
         "file owned by root), for programs whose stderr must stay clean"),
    text("stats", &Options::stats, "stderr|PATH",
         "where each process appends its statistics as one JSON line at exit (a regular "
         "file; a path may hold %p for the pid, and is absolute in a file owned by root); "
         "empty: no statistics. A file that cannot be written is reported once, in log_file "
         "when one is set"),
    number("stats_interval", &Options::stats_interval, 0, 86400, "s",
           "also write a statistics line every this many seconds from long-running "
           "processes; 0: only at exit"),
    number("ab", &Options::ab, 0, 100, "%",
           "A/B test: the share of processes in the treatment arm (the configured mode); "
           "the others run mode=off as the control arm; 100: no experiment"),
    number("ab_seed", &Options::ab_seed, 0, 4294967295u, "",
           "with the pid, decides each process's A/B arm; change it to draw new arms"),
    number("ab_period", &Options::ab_period, 0, 86400, "s",
           "switchback for long-lived processes: in an A/B test, each process alternates "
           "between the arms every this many seconds (ab and ab_seed draw its first arm), with "
           "a statistics line at each switch; 0: a process keeps one arm"),
    number("reload_ms", &Options::reload_ms, 0, 3600000, "ms",
           "how often, at most, a running process looks for a changed config file (one "
           "stat, from a pipe wait); 0: never. The delay before a change applies"),
};
static_assert(std::size(kTable) == kOptionCount);

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

}  // namespace

std::span<const OptionSpec> option_table() noexcept {
    return kTable;
}

std::size_t option_index(const OptionSpec& spec) noexcept {
    return static_cast<std::size_t>(&spec - kTable);
}

const OptionSpec* find_option(std::string_view name) noexcept {
    for (const auto& spec : kTable)
        if (spec.name == name) return &spec;
    return nullptr;
}

RawParse parse_raw(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) noexcept {
    std::string_view t = trim(text);
    if (spec.kind == OptionKind::Text) return {fallback, ParseStatus::Bad};
    if (spec.kind == OptionKind::Choice) {
        for (std::uint32_t i = 0; i < spec.choices.size(); ++i)
            if (iequals(t, spec.choices[i])) return {i, ParseStatus::Ok};
        return {fallback, ParseStatus::Bad};
    }
    if (t.empty()) return {fallback, ParseStatus::Bad};
    std::uint64_t v = 0;
    bool overflow = false;
    for (char c : t) {
        if (c < '0' || c > '9') return {fallback, ParseStatus::Bad};
        if (v > (~0ull - 9) / 10)
            overflow = true;
        else
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (overflow || v > spec.max) return {spec.max, ParseStatus::AboveMax};
    if (v < spec.min) return {spec.min, ParseStatus::BelowMin};
    return {static_cast<std::uint32_t>(v), ParseStatus::Ok};
}

bool format_option_into(const OptionSpec& spec, const Options& options, char* buf,
                        std::size_t size) noexcept {
    if (size == 0) return false;
    buf[0] = '\0';
    std::string_view v;
    char digits[24];
    if (spec.kind == OptionKind::Text) {
        v = (options.*spec.text).view();
    } else if (spec.kind == OptionKind::Choice) {
        const std::uint32_t i = options.*spec.field;
        v = i < spec.choices.size() ? spec.choices[i] : "?";
    } else {
        // By hand rather than snprintf: this runs in exec wrappers and at exit.
        std::uint32_t x = options.*spec.field;
        std::size_t n = sizeof digits;
        do {
            digits[--n] = static_cast<char>('0' + x % 10);
            x /= 10;
        } while (x != 0);
        v = std::string_view(digits + n, sizeof digits - n);
    }
    const std::size_t n = v.size() < size - 1 ? v.size() : size - 1;
    __builtin_memcpy(buf, v.data(), n);
    buf[n] = '\0';
    return n == v.size();
}

bool env_name_into(const OptionSpec& spec, char* buf, std::size_t size) noexcept {
    constexpr std::string_view kPrefix = "PIPESPIN_";
    if (kPrefix.size() + spec.name.size() + 1 > size) return false;
    std::size_t n = 0;
    for (char c : kPrefix) buf[n++] = c;
    for (char c : spec.name)
        buf[n++] = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    buf[n] = '\0';
    return true;
}

void describe_problem(const OptionSpec& spec, ParseStatus status, std::string_view text,
                      std::uint32_t used, char* buf, std::size_t size) noexcept {
    Out o{buf, size};
    if (size) buf[0] = '\0';
    switch (status) {
        case ParseStatus::Ok:
            return;
        case ParseStatus::Bad:
            o.put("bad value '");
            o.printable(text);
            o.put(spec.kind == OptionKind::Number ? "' (expected a whole number " : "' (expected ");
            o.accepted(spec);
            o.put(")");
            break;
        case ParseStatus::TooLong:  // texts only, described by apply_option
        case ParseStatus::AboveMax:
        case ParseStatus::BelowMin:
            o.put("value '");
            o.printable(text);
            o.put(status == ParseStatus::AboveMax ? "' is above the maximum "
                                                  : "' is below the minimum ");
            o.num(status == ParseStatus::AboveMax ? spec.max : spec.min);
            break;
    }
    o.put("; using ");
    o.value(spec, used);
}

ParseStatus apply_option(const OptionSpec& spec, std::string_view text, Options& options, char* why,
                         std::size_t why_size) noexcept {
    if (why != nullptr && why_size) why[0] = '\0';
    if (spec.kind != OptionKind::Text) {
        std::uint32_t& slot = options.*spec.field;
        RawParse pr = parse_raw(spec, text, slot);
        if (pr.status != ParseStatus::Ok && why != nullptr)
            describe_problem(spec, pr.status, text, pr.value, why, why_size);
        slot = pr.value;
        return pr.status;
    }
    TextValue& slot = options.*spec.text;
    const std::string_view t = trim(text);
    ParseStatus status = ParseStatus::Ok;
    if (t.size() >= sizeof slot.s) status = ParseStatus::TooLong;
    for (char c : t)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) status = ParseStatus::Bad;
    if (status == ParseStatus::Ok) {
        __builtin_memcpy(slot.s, t.data(), t.size());
        slot.s[t.size()] = '\0';
        return status;
    }
    if (why != nullptr) {
        Out o{why, why_size};
        o.put(status == ParseStatus::TooLong ? "value '" : "bad value '");
        o.printable(text);
        o.put(status == ParseStatus::TooLong ? "' is too long (at most 231 bytes)"
                                             : "' (control characters)");
        o.put("; using '");
        o.printable(slot.view());
        o.put("'");
    }
    return status;
}

}  // namespace pipespin
