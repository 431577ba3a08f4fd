"""Reads a fabric-report html page with html.parser and prints the html
test's assertions in the test protocol (ok - / not ok -).
usage: check-html.py PAGE.html HOSTILE-CLUSTER-NAME SIZES"""
import html.parser
import math
import re
import sys

page_path, hostile, nsizes = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(page_path, encoding="utf-8").read()


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.sections, self.svgs, self.cells = [], [], [], []
        self.tags, self.outside = {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.stack.append(tag)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "svg":
            self.svgs.append({"polylines": [], "section": self.sections[-1] if self.sections else None,
                              "outliers": 0})
        if tag == "polyline" and self.svgs:
            self.svgs[-1]["polylines"].append(len(a.get("points", "").split()))
        if tag == "circle" and self.svgs and "outlier" in (a.get("class") or ""):
            self.svgs[-1]["outliers"] += 1
        if tag == "text" and self.svgs and a.get("class") in ("yl", "xl"):
            self.svgs[-1].setdefault(a["class"], []).append(None)  # filled by handle_data
        for k in ("src", "href", "action"):
            v = a.get(k)
            if v is not None and not v.startswith("#"):
                self.outside.append(f"{tag} {k}={v}")
        if tag == "link":
            self.outside.append("link element")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.stack.pop()

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if self.stack and self.stack[-1] in ("td", "h3", "summary"):
            self.cells.append(data.strip())
        if self.stack and self.stack[-1] == "text" and self.svgs:
            for cls in ("yl", "xl"):
                labels = self.svgs[-1].get(cls)
                if labels and labels[-1] is None:
                    labels[-1] = data.strip()


p = Page()
p.feed(text)
p.close()


def check(name, cond, why):
    print(f"ok - {name}" if cond else f"not ok - {name}: {why}")


for s in ("verdicts", "compare", "history", "doctor", "probe"):
    check(f"the page has its {s} section", s in p.sections, f"sections {p.sections}")
size_plots = [s for s in p.svgs if s["section"] == "compare"]
hist_plots = [s for s in p.svgs if s["section"] == "history"]
check("one busBW-vs-size plot (one collective)", len(size_plots) == 1, f"{len(size_plots)} plots")
check("... with a line per cluster of one point per size",
      size_plots and sorted(size_plots[0]["polylines"]) == [nsizes] * 4, f"{size_plots and size_plots[0]['polylines']}")
check("one history plot per series (A, B, C, hostile)", len(hist_plots) == 4, f"{len(hist_plots)}")
check("... each line with one point per run that has a figure",
      [s["polylines"] for s in hist_plots] == [[4], [3], [1], [1]], f"{[s['polylines'] for s in hist_plots]}")
check("... and the injected slow run marked in A's plot", [s["outliers"] for s in hist_plots] == [1, 0, 0, 0],
      f"{[s['outliers'] for s in hist_plots]}")
check("the history table marks it OUTLIER", p.cells.count("OUTLIER") == 1, f"{p.cells.count('OUTLIER')} cells")
check("the verdicts say INCOMPLETE for the short sweeps", p.cells.count("INCOMPLETE") >= 7,
      f"{p.cells.count('INCOMPLETE')}")
check("... and FAIL for the run with wrong elements", p.cells.count("FAIL") == 1, f"{p.cells.count('FAIL')}")
check("the doctor checks are rows", any(c == "fail" for c in p.cells) and "ok" in p.cells, "no doctor verdict cells")
check("the hostile cluster name renders as text", hostile in p.cells, "not among the cells")
check("... and never as markup", "<script" not in text.lower() and p.tags.get("script", 0) == 0,
      "a <script> in the source")
check("nothing is fetched (no src, href, link to elsewhere)", not p.outside, f"{p.outside[:5]}")


# Axis ticks on round values: busBW labels step by 1, 2 or 5 times a power
# of ten from 0; size labels are powers of two (1K, 4K, ..., never 1.5K).
def round_step(step):
    if step <= 0:
        return False
    mant = step / 10 ** math.floor(math.log10(step) + 1e-9)
    return any(abs(mant - m) < 1e-6 for m in (1, 2, 5))


def y_ticks_round(labels):
    values = [float(v) for v in labels]
    steps = {round(b - a, 12) for a, b in zip(values, values[1:])}
    return values[:1] == [0.0] and len(steps) == 1 and round_step(steps.pop())


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def power_of_two(label):
    num, unit = label.rstrip("KMGT"), label[len(label.rstrip("KMGT")):]
    return num.isdigit() and unit in UNITS and (int(num) * UNITS[unit]) & (int(num) * UNITS[unit] - 1) == 0


bad_y = [s["yl"] for s in p.svgs if not y_ticks_round(s.get("yl", []))]
check("every plot's busBW axis steps by 1, 2 or 5 x 10^k from 0", not bad_y, f"{bad_y[:2]}")
size_labels = [[x for x in s.get("xl", []) if re.fullmatch(r"[0-9.]+[KMGT]?", x or "")] for s in size_plots]
bad_x = [labels for labels in size_labels if len(labels) < 2 or not all(power_of_two(x) for x in labels)]
check("the size axis labels powers of two", size_plots and not bad_x, f"{bad_x[:2]}")
