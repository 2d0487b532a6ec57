// The help flags and --version print to stdout and exit 0 (gflags: 1, but
// asking for help is no error). --help lists the binary's own flags, as
// the main's, and points to --helpfull (glog's and gflags' too: a hundred
// lines a reader rarely needs). Files are named without their absolute path.
#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <tuple>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"
#include "shmbench/upstream.h"

namespace shmb {
namespace internal {
namespace {

std::string FlagValue(const char* name)
{
    std::string value;
    gflags::GetCommandLineOption(name, &value);
    return value;
}

std::string XmlEscape(const std::string& text)
{
    std::string out;
    for (char c : text) {
        switch (c) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string BaseName(const std::string& path)
{
    return path.substr(path.find_last_of('/') + 1);
}

// Every flag, sorted by file then name as gflags lists them, the binary's
// own as the main's (which of its files reads a flag is no user's concern).
std::vector<gflags::CommandLineFlagInfo> AllFlags()
{
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    for (auto& f : flags)
        f.filename = OwnFlag(f.filename) ? g_run.main_file : f.filename;
    std::sort(flags.begin(), flags.end(), [](const auto& a, const auto& b) {
        return std::tie(a.filename, a.name) < std::tie(b.filename, b.name);
    });
    return flags;
}

// gflags' ShowUsageWithFlagsRestrict, each file named by its base name.
void ShowFlags(const char* argv0, const std::function<bool(const std::string&)>& wanted)
{
    std::printf("%s: %s\n", BaseName(argv0).c_str(), gflags::ProgramUsage());
    std::string last;
    for (const auto& f : AllFlags()) {
        if (!wanted(f.filename))
            continue;
        if (f.filename != last)
            std::printf("\n  Flags from %s:\n", BaseName(f.filename).c_str());
        last = f.filename;
        std::printf("%s", gflags::DescribeOneFlag(f).c_str());
    }
    if (last.empty())
        std::printf("\n  No modules matched: use -help\n");
}

bool Contains(const std::string& file, const std::string& part)
{
    return file.find(part) != std::string::npos;
}

// gflags' --helpxml, which gflags only offers from inside its parser (and
// then exits 1).
void ShowXml()
{
    std::printf("<?xml version=\"1.0\"?>\n<AllFlags>\n<program>%s</program>\n<usage>%s</usage>\n",
                XmlEscape(g_run.program).c_str(), XmlEscape(gflags::ProgramUsage()).c_str());
    for (const auto& f : AllFlags())
        std::printf("<flag><file>%s</file><name>%s</name><meaning>%s</meaning><default>%s</default>"
                    "<current>%s</current><type>%s</type></flag>\n",
                    XmlEscape(BaseName(f.filename)).c_str(), XmlEscape(f.name).c_str(),
                    XmlEscape(f.description).c_str(), XmlEscape(f.default_value).c_str(),
                    XmlEscape(f.current_value).c_str(), XmlEscape(f.type).c_str());
    std::printf("</AllFlags>\n");
}

}  // namespace

void HandleHelp(const char* argv0)
{
    bool shown = true;
    auto own = [](const std::string& file) { return file == g_run.main_file; };
    if (FlagValue("helpshort") == "true" || FlagValue("helppackage") == "true") {
        ShowFlags(argv0, own);
    } else if (FlagValue("helpfull") == "true") {
        ShowFlags(argv0, [](const std::string&) { return true; });
    } else if (FlagValue("help") == "true") {
        ShowFlags(argv0, own);
        if (shmb_upstream_available())  // scripts/run_all.sh reads this line
            std::printf("\nupstream: built against Mooncake %s: --system=" SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME
                        " (docs/upstream.md)\n",
                        shmb_upstream_commit());
        std::printf("\n--helpfull also lists the flags of glog and gflags (logging, --flagfile, --fromenv, ...)\n");
    } else if (!FlagValue("helpon").empty()) {
        const std::string part = "/" + FlagValue("helpon") + ".";
        ShowFlags(argv0, [&](const std::string& file) { return Contains(file, part); });
    } else if (!FlagValue("helpmatch").empty()) {
        const std::string part = FlagValue("helpmatch");
        ShowFlags(argv0, [&](const std::string& file) { return Contains(file, part); });
    } else if (FlagValue("helpxml") == "true") {
        ShowXml();
    } else {
        shown = false;
    }
    if (shown)
        std::exit(std::fflush(stdout) == 0 ? 0 : 1);
    gflags::HandleCommandLineHelpFlags();  // --version: prints it, exits 0
}

}  // namespace internal
}  // namespace shmb
