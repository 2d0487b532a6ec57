// The help flags and --version: each prints to stdout and exits 0 (gflags
// would exit 1: asking for help is no error). --help and --helpshort list
// the binary's own flags, --help with a pointer to --helpfull, which adds
// glog's and gflags' own (about a hundred lines a reader rarely needs).
// -h is --help (ParseFlags). Flags are listed under their source file's
// name, not its path: gflags would print the build's absolute path.
#include <gflags/gflags.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"
#include "shmbench/lookup_bench.h"
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

// gflags' ShowUsageWithFlagsRestrict, each file named by its base name.
void ShowFlags(const char* argv0, const std::function<bool(const std::string&)>& wanted)
{
    std::printf("%s: %s\n", BaseName(argv0).c_str(), gflags::ProgramUsage());
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);  // sorted by file, then name
    std::string last;
    for (const auto& f : flags) {
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
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    std::printf("<?xml version=\"1.0\"?>\n<AllFlags>\n<program>%s</program>\n<usage>%s</usage>\n",
                XmlEscape(g_run.program).c_str(), XmlEscape(gflags::ProgramUsage()).c_str());
    for (const auto& f : flags)
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
    const std::string& main_file = g_run.main_file;
    bool shown = true;
    const std::string dir = main_file.substr(0, main_file.find_last_of('/') + 1);
    auto own = [&](const std::string& file) { return file == main_file; };
    if (FlagValue("helpshort") == "true") {
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
    } else if (FlagValue("helppackage") == "true") {
        ShowFlags(argv0, [&](const std::string& file) { return file.compare(0, dir.size(), dir) == 0; });
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
