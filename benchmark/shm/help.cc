// The help flags and --version: each prints to stdout and exits 0 (gflags
// would exit 1: asking for help is no error). --help and --helpshort list
// the binary's own flags, --help with a pointer to --helpfull, which adds
// glog's and gflags' own (about a hundred lines a reader rarely needs).
#include <gflags/gflags.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"

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
                    XmlEscape(f.filename).c_str(), XmlEscape(f.name).c_str(),
                    XmlEscape(f.description).c_str(), XmlEscape(f.default_value).c_str(),
                    XmlEscape(f.current_value).c_str(), XmlEscape(f.type).c_str());
    std::printf("</AllFlags>\n");
}

}  // namespace

void HandleHelp(const char* argv0)
{
    const std::string& main_file = g_run.main_file;
    bool shown = true;
    if (FlagValue("helpshort") == "true") {
        gflags::ShowUsageWithFlagsRestrict(argv0, main_file.c_str());
    } else if (FlagValue("helpfull") == "true") {
        gflags::ShowUsageWithFlags(argv0);
    } else if (FlagValue("help") == "true") {
        gflags::ShowUsageWithFlagsRestrict(argv0, main_file.c_str());
        std::printf("\n--helpfull also lists the flags of glog and gflags (logging, --flagfile, --fromenv, ...)\n");
    } else if (!FlagValue("helpon").empty()) {
        gflags::ShowUsageWithFlagsRestrict(argv0, ("/" + FlagValue("helpon") + ".").c_str());
    } else if (!FlagValue("helpmatch").empty()) {
        gflags::ShowUsageWithFlagsRestrict(argv0, FlagValue("helpmatch").c_str());
    } else if (FlagValue("helppackage") == "true") {
        gflags::ShowUsageWithFlagsRestrict(argv0, main_file.substr(0, main_file.find_last_of('/') + 1).c_str());
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
