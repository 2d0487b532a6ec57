// The command line: every argument checked before gflags sees it (a bad or
// unknown flag is one line and exit 2, wherever it comes from), the modes'
// refusals, and the checks of the flags' values (ranges, choices, lists).
#include <gflags/gflags.h>
#include <strings.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <sstream>

#include "bench_common.h"
#include "bench_internal.h"
#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

namespace shmb {

using internal::Printable;
using internal::UsageError;

namespace {

std::string Join(const std::vector<std::string>& items)
{
    std::string list;
    for (const std::string& item : items)
        list += (list.empty() ? "" : ",") + item;
    return list;
}

bool HasControl(const std::string& value)
{
    for (unsigned char c : value)
        if (c < 0x20 || c == 0x7f)
            return true;
    return false;
}

bool ParsesAsBool(const char* s)
{
    static const char* words[] = {"true", "false", "1", "0", "yes", "no", "t", "f", "y", "n"};
    for (const char* w : words)
        if (strcasecmp(s, w) == 0)
            return true;
    return false;
}

bool ParsesAs(const std::string& type, const std::string& value)
{
    if (type == "string")
        return true;  // each binary checks its strings itself
    if (value.empty())
        return false;
    const char* s = value.c_str();
    char* end = nullptr;
    errno = 0;
    if (type == "bool")
        return ParsesAsBool(s);
    if (type == "int32" || type == "int64") {
        long long v = std::strtoll(s, &end, 10);
        if (type == "int32" && (v < INT32_MIN || v > INT32_MAX))
            return false;
        return errno == 0 && *end == '\0';
    }
    if (type == "uint32" || type == "uint64") {
        if (value.find('-') != std::string::npos)
            return false;
        unsigned long long v = std::strtoull(s, &end, 10);
        if (type == "uint32" && v > UINT32_MAX)
            return false;
        return errno == 0 && *end == '\0';
    }
    std::strtod(s, &end);  // double
    return errno == 0 && *end == '\0';
}

// Every way a flag reaches gflags (the command line, --flagfile, --fromenv,
// --tryfromenv) goes through these checks first, so that a bad or unknown
// flag exits 2 with one line naming it, as gflags itself would not (exit 1,
// or silence for an unknown flag in a flagfile).
constexpr size_t kFlagfileLineMax = 65536;

class ArgChecker {
public:
    // Checks argv[i] (and argv[i + 1] when it is the value); returns how
    // many arguments it used.
    int CheckCommandLine(int argc, char** argv, int i)
    {
        std::string next = i + 1 < argc ? argv[i + 1] : "";
        return Check(argv[i], i + 1 < argc ? &next : nullptr, "");
    }

private:
    int depth_ = 0;

    [[noreturn]] void Bad(const std::string& flag, const std::string& value, const std::string& why,
                          const std::string& where)
    {
        UsageError("invalid --" + flag + "=" + Printable(value) + where + ": " + why);
    }

    // --noFLAG for a bool FLAG: returns 1, or refuses a value.
    int CheckNegation(const std::string& name, const std::string& body, size_t eq, const std::string& where)
    {
        gflags::CommandLineFlagInfo info;
        if (name.compare(0, 2, "no") != 0 || !gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) ||
            info.type != "bool")
            UsageError("unknown flag --" + Printable(name) + where + " (see --helpshort)");
        if (eq != std::string::npos)
            Bad(name, body.substr(eq + 1),
                "--no" + info.name + " takes no value; write --" + info.name + "=true or --" + info.name +
                    "=false",
                where);
        return 1;
    }

    int Check(const std::string& arg, const std::string* next, const std::string& where)
    {
        if (arg.size() < 2 || arg[0] != '-')
            UsageError("unexpected argument '" + Printable(arg) + "'" + where +
                       " (flags are --name=value; see --helpshort)");
        std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
        size_t eq = body.find('=');
        std::string name = body.substr(0, eq);
        bool has_value = eq != std::string::npos;
        gflags::CommandLineFlagInfo info;
        if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info))
            return CheckNegation(name, body, eq, where);
        if (info.type == "bool" && !has_value)
            return 1;
        std::string value;
        int used = 1;
        if (has_value) {
            value = body.substr(eq + 1);
        } else if (next && where.empty()) {
            value = *next;
            used = 2;
        } else {
            UsageError("flag --" + name + where + " needs a value (--" + name + "=value)");
        }
        CheckValue(info, value, where);
        return used;
    }

    void CheckValue(const gflags::CommandLineFlagInfo& info, const std::string& value,
                    const std::string& where)
    {
        if (HasControl(value))
            Bad(info.name, value, "control characters are not allowed", where);
        if (!ParsesAs(info.type, value))
            Bad(info.name, value, "not a valid " + info.type, where);
        if (info.name == "flagfile")
            CheckFlagfile(value);
        else if (info.name == "fromenv" || info.name == "tryfromenv")
            CheckFromEnv(info.name, value, where);
    }

    // A flagfile holds one --name=value per line; '#' starts a comment.
    void CheckFlagfile(const std::string& files)
    {
        if (++depth_ > 8)
            Bad("flagfile", files, "flagfiles nest too deep", "");
        std::stringstream list(files);
        std::string file;
        while (std::getline(list, file, ',')) {
            FILE* in = std::fopen(file.c_str(), "re");
            if (!in)
                Bad("flagfile", file, std::string("cannot be read: ") + std::strerror(errno), "");
            // a line is read into this much room, never more (--flagfile=/dev/zero)
            std::vector<char> buf(kFlagfileLineMax + 1);
            size_t len = 0;
            int ret;
            for (int n = 1; (ret = shmb_file_read_line(in, buf.data(), buf.size(), &len)) > 0; n++) {
                std::string line(buf.data(), len), where;
                size_t start = line.find_first_not_of(" \t");
                if (start == std::string::npos || line[start] == '#')
                    continue;
                line = line.substr(start, line.find_last_not_of(" \t\r") + 1 - start);
                where = " (line " + std::to_string(n) + " of --flagfile=" + Printable(file) + ")";
                Check(line, nullptr, where);
            }
            std::fclose(in);
            if (ret == -E2BIG)
                Bad("flagfile", file, "a line longer than " + std::to_string(kFlagfileLineMax) + " bytes", "");
            if (ret < 0)
                Bad("flagfile", file, std::string("cannot be read: ") + std::strerror(-ret), "");
        }
        depth_--;
    }

    // --fromenv=a,b takes --a from $FLAGS_a (which must be set), --tryfromenv
    // too when set.
    void CheckFromEnv(const std::string& which, const std::string& names, const std::string& where)
    {
        std::stringstream list(names);
        std::string name;
        while (std::getline(list, name, ',')) {
            gflags::CommandLineFlagInfo info;
            if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info))
                Bad(which, names, "unknown flag --" + Printable(name), where);
            if (info.name == "fromenv" || info.name == "tryfromenv" || info.name == "flagfile")
                Bad(which, names, "--" + info.name + " cannot come from the environment", where);
            const char* env = std::getenv(("FLAGS_" + name).c_str());
            if (!env) {
                if (which == "fromenv")
                    Bad(which, names, "FLAGS_" + name + " is not set in the environment", where);
                continue;
            }
            CheckValue(info, env, " (from FLAGS_" + name + " in the environment)");
        }
    }
};

}  // namespace

namespace internal {

void ParseFlags(int* argc, char*** argv, const char* usage)
{
    gflags::SetUsageMessage(usage);
    gflags::SetVersionString(SHMB_VERSION);
    ArgChecker checker;
    static char help[] = "--help";  // -h, as most tools take it; gflags knows no -h
    for (int i = 1; i < *argc;) {
        if (std::string((*argv)[i]) == "--")
            break;
        if (std::string((*argv)[i]) == "-h")
            (*argv)[i] = help;
        i += checker.CheckCommandLine(*argc, *argv, i);
    }
    gflags::ParseCommandLineNonHelpFlags(argc, argv, true);
    HandleHelp((*argv)[0]);
    if (*argc > 1)
        UsageError(std::string("unexpected argument '") + Printable((*argv)[1]) + "'");
}

// mooncake_upstream (docs/upstream.md): a system only in a build against the
// user's Mooncake, and only where upstream code answers the questions
// (shm_allocation_bench's bare allocator; shm_transfer_bench's paired
// translate and submit, with TENT built); else one line, exit 2.
bool UpstreamSystem(const char* flag, const std::string& value, const std::string& name)
{
    // Flow-IPC's: the binary and the rows each answers, beside its model.
    static const struct {
        const char *name, *binary, *answers;
    } flowipc[] = {
        {SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM_NAME, "shm_allocation_bench",
         "shm_allocation_bench's alloc_bare and free_bare with --systems=flowipc_classic,"},
        {SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM_NAME, "shm_transfer_bench",
         "shm_transfer_bench's translate (to_address) with --systems=flowipc_jemalloc,"},
    };
    for (const auto& up : flowipc) {
        if (name != up.name)
            continue;
        if (!shmb_upstream_flowipc_available())
            FlagError(flag, value, name + " not built: configure with -DSHMB_FLOWIPC_SOURCE=DIR, see docs/upstream.md");
        if (g_run.main_file.find(up.binary) == std::string::npos || std::string(flag) != "systems")
            FlagError(flag, value,
                      name + " is not covered by " + g_run.program + (std::string(flag) == "system" ? " alone" : "") +
                          ": upstream code answers " + up.answers + name + " (docs/upstream.md)");
        return true;
    }
    if (name != SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME)
        return false;
    if (!shmb_upstream_available())
        FlagError(flag, value,
                  "mooncake_upstream not built: configure with -DSHMB_MOONCAKE_SOURCE=PATH, see docs/upstream.md");
    const bool transfer = g_run.main_file.find("shm_transfer_bench") != std::string::npos;
    if (transfer && std::string(flag) == "systems" && shmb_upstream_tent_available())
        return true;
    if (g_run.main_file.find("shm_allocation_bench") == std::string::npos)
        FlagError(flag, value,
                  "mooncake_upstream is not covered by " + g_run.program + (transfer ? " here" : "") +
                      ": upstream code answers shm_allocation_bench's alloc_bare and free_bare, and "
                      "shm_transfer_bench's translate and submit with --systems and TENT built (docs/upstream.md)");
    return true;
}

void CheckCommonFlags()
{
    shmb_format_t format;
    if (shmb_report_parse_format(FLAGS_format.c_str(), &format) != 0)
        FlagError("format", FLAGS_format, "one of table, csv, json");
    CheckRange("repetitions", FLAGS_repetitions, 1, 1000);
    if (!FLAGS_system.empty() && !UpstreamSystem("system", FLAGS_system, FLAGS_system) &&
        shmb_path_system(FLAGS_system.c_str()) < 0)
        FlagError("system", FLAGS_system, "one of " + PathNames(SHMB_PATH_SYSTEM));
    if (shmb_segment_check_prefix(FLAGS_shm_prefix.c_str()) < 0)
        FlagError("shm_prefix", FLAGS_shm_prefix,
                  "must start with '/', contain no other '/' and be at most " +
                      std::to_string(SHMB_SEGMENT_NAME_MAX - 48) + " characters");
}

bool OwnFlag(const std::string& file)
{
    const size_t dir = g_run.main_file.find_last_of('/') + 1;
    return file.compare(0, dir, g_run.main_file, 0, dir) == 0;
}

std::string FlagsLine()
{
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);  // sorted by file, then name: sorted by name here
    std::sort(flags.begin(), flags.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::string line;
    for (const auto& f : flags) {
        if (!OwnFlag(f.filename) || f.name == "json_out")
            continue;
        line += (line.empty() ? "" : " ") + f.name + "=" + f.current_value;
    }
    return line;
}

}  // namespace internal

std::vector<shmb_system_t> PairedSystems(std::vector<std::string>* names)
{
    std::vector<shmb_system_t> systems;
    names->clear();
    if (FLAGS_systems.empty())
        return systems;
    if (!FLAGS_system.empty())
        FlagError("systems", FLAGS_systems, "give it or --system, not both");
    if (FLAGS_repetitions != 1)
        FlagError("repetitions", std::to_string(FLAGS_repetitions),
                  "must be 1 with --systems (a paired run's rounds are its repetitions)");
    std::string list = FLAGS_systems + ",";
    for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
        const std::string name = list.substr(at, comma - at);
        const bool upstream = internal::UpstreamSystem("systems", FLAGS_systems, name);
        const bool fipc_classic = name == SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM_NAME;
        const bool fipc_jemalloc = name == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM_NAME;
        const shmb_system_t model = fipc_classic ? SHMB_SYSTEM_FLOWIPC_CLASSIC : SHMB_SYSTEM_FLOWIPC_JEMALLOC;
        if ((fipc_classic || fipc_jemalloc) && (systems.empty() || systems[0] != model))
            FlagError("systems", FLAGS_systems, "with " + name + " the baseline (first) must be " +
                                                    shmb_system_name(model) + ", the model it is held against");
        if (upstream && systems.empty())
            FlagError("systems", FLAGS_systems, "the baseline (first) must be a model: mooncake_upstream pairs "
                                                "against one (--systems=mooncake,mooncake_upstream)");
        const int s = !upstream                                  ? shmb_path_system(name.c_str())
                      : name == SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME ? static_cast<int>(SHMB_SYSTEM_MOONCAKE_UPSTREAM)
                      : fipc_classic ? static_cast<int>(SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM)
                                     : static_cast<int>(SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM);
        if (s < 0)
            FlagError("systems", FLAGS_systems, "'" + Printable(name) + "' is not one of " +
                                                    PathNames(SHMB_PATH_SYSTEM));
        for (const std::string& seen : *names)
            if (seen == name)
                FlagError("systems", FLAGS_systems, "names " + name + " twice");
        systems.push_back(static_cast<shmb_system_t>(s));
        names->push_back(name);
    }
    if (systems.size() < 2)
        FlagError("systems", FLAGS_systems, "needs at least two systems, the baseline first");
    systems.push_back(systems[0]);
    names->push_back(names->front() + SHMB_PAIRED_CONTROL_SUFFIX);
    return systems;
}

int RunMode(const std::vector<Mode>& modes, size_t pick)
{
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    for (const auto& f : flags) {
        if (f.is_default || InList(modes[pick].flags, f.name))
            continue;
        std::string readers;
        for (const Mode& m : modes)
            if (InList(m.flags, f.name))
                readers += (readers.empty() ? "" : " or ") + std::string(m.name);
        if (!readers.empty())
            FlagError(f.name.c_str(), f.current_value,
                      "not read by " + std::string(modes[pick].name) + ", only by " + readers);
    }
    return modes[pick].run();
}

uint64_t CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi)
{
    if (value < lo || value > hi)
        FlagError(flag, std::to_string(value),
                  "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return static_cast<uint64_t>(value);
}

int CheckChoice(const char* flag, const std::string& value, const std::vector<std::string>& choices)
{
    std::string allowed;
    for (size_t i = 0; i < choices.size(); i++) {
        if (choices[i] == value)
            return static_cast<int>(i);
        allowed += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    }
    FlagError(flag, value, allowed);
}

std::string PathNames(unsigned kinds)
{
    std::string names(64, '\0');
    int len;
    while ((len = shmb_path_names(kinds, &names[0], names.size())) == -ENOSPC)
        names.resize(names.size() * 2);
    names.resize(len < 0 ? 0 : static_cast<size_t>(len));
    return names;
}

std::string JoinNames(int count, const std::function<const char*(int)>& name)
{
    std::string list;
    for (int i = 0; i < count; i++)
        if (const char* n = name(i))
            list += (list.empty() ? "" : ",") + std::string(n);
    return list;
}

bool InList(const std::string& list, const std::string& item)
{
    std::stringstream ss(list);
    std::string part;
    while (std::getline(ss, part, ','))
        if (part == item)
            return true;
    return false;
}

std::vector<std::string> CheckItems(const char* flag, const std::string& value,
                                    const std::function<bool(const std::string&)>& valid,
                                    const std::string& allowed, const std::string& empty)
{
    std::stringstream ss(value);
    std::string part, seen;
    std::vector<std::string> items;
    while (std::getline(ss, part, ',')) {
        if (!valid(part) || InList(seen, part))
            FlagError(flag, value, allowed);
        seen += (seen.empty() ? "" : ",") + part;
        items.push_back(part);
    }
    if (items.empty() || value.back() == ',')
        FlagError(flag, value, empty);
    return items;
}

std::string CheckList(const char* flag, const std::string& value, const std::string& allowed)
{
    const std::string why = "a comma-separated list of distinct items of " + allowed;
    return Join(CheckItems(flag, value, [&](const std::string& s) { return InList(allowed, s); }, why, why));
}

std::string CheckListOrAll(const char* flag, const std::string& value, const std::string& known,
                           const std::string& available)
{
    if (value == "all")
        return available;
    const std::string why = "all, or a comma-separated list of distinct items of " + known;
    std::string list = Join(CheckItems(flag, value, [&](const std::string& s) { return InList(known, s); }, why, why));
    std::stringstream ss(known);
    std::string item;
    while (std::getline(ss, item, ','))
        if (InList(list, item) && !InList(available, item))
            FlagError(flag, value, item + " is not available on this machine; available: " + available);
    return list;
}

std::string CheckVariants(const char* flag, const std::string& value, const std::string& allowed,
                          const std::string& system_variant, const char* what)
{
    std::string list = CheckList(flag, value, allowed);
    if (FLAGS_system.empty())
        return list;
    if (!gflags::GetCommandLineFlagInfoOrDie(flag).is_default)
        FlagError(flag, value, std::string("cannot be combined with --system (it selects the ") + what + ")");
    return system_variant;
}

std::vector<uint64_t> CheckCounts(const char* flag, const std::string& value, uint64_t max, const char* what)
{
    std::vector<uint64_t> counts;
    auto valid = [&](const std::string& item) {
        if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos)
            return false;
        uint64_t v = std::strtoull(item.c_str(), nullptr, 10);
        bool fresh = std::find(counts.begin(), counts.end(), v) == counts.end();
        counts.push_back(v);
        return v >= 1 && v <= max && fresh;
    };
    CheckItems(flag, value, valid,
               "a comma-separated list of distinct " + std::string(what) + " (digits only) between 1 and " +
                   std::to_string(max),
               "a comma-separated list of " + std::string(what));
    return counts;
}

}  // namespace shmb
