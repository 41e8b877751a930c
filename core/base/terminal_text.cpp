// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/terminal_text.h"

#include "base/utf8.h"

#include <cstdio>

namespace membudget {

namespace {

void appendEscape(std::string &out, const char *format, unsigned long value)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
}

} // namespace

bool isInvisibleOrControl(char32_t cp)
{
    // C1 controls (U+0085 NEL included), then Unicode 15 PropList.txt Bidi_Control (061C, 200E,
    // 200F, 202A..202E, 2066..2069) and the invisible format characters among
    // Default_Ignorable_Code_Point (DerivedCoreProperties.txt) that have no business in a name:
    // soft hyphen, Mongolian vowel separator, zero-width space/joiners, word joiner and invisible
    // operators, deprecated format characters, BOM, interlinear annotation and tag characters.
    // Variation selectors (emoji presentation) are left alone. U+2028/U+2029 break lines.
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0xAD || cp == 0x061C || cp == 0x180E
           || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E)
           || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB)
           || (cp >= 0xE0000 && cp <= 0xE007F);
}

std::string escapeForTerminal(std::string_view text, LineBreaks breaks, std::size_t limit)
{
    const std::string s(text);
    std::string out;
    out.reserve(std::min(s.size(), limit) + 8);
    std::size_t i = 0;
    while (i < s.size()) {
        if (out.size() >= limit) {
            out += "...";
            break;
        }
        char32_t cp = 0;
        const std::size_t n = utf8SequenceLength(s, i, cp);
        if (n == 0) {
            appendEscape(out, "\\x%02lX", static_cast<unsigned char>(s[i]));
            ++i;
            continue;
        }
        if (cp == '\n' || cp == '\t') {
            if (breaks == LineBreaks::Keep)
                out += static_cast<char>(cp);
            else
                out += cp == '\n' ? "\\n" : " ";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp < 0x20 || cp == 0x7F) {
            appendEscape(out, "\\x%02lX", cp);
        } else if (isInvisibleOrControl(cp)) {
            appendEscape(out, cp > 0xFFFF ? "\\U%08lX" : "\\u%04lX", cp);
        } else {
            out.append(s, i, n);
        }
        i += n;
    }
    return out;
}

} // namespace membudget
