package telemetry

import (
	"bufio"

	"github.com/edgenf/edgenf/internal/cube"
	"math"
	"slices"
	"strconv"
	"strings"
)

// TextContentType is the Prometheus text exposition format WriteText writes.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText writes points in the Prometheus text exposition format, each
// family once with its HELP and TYPE, families sorted by name and, within
// a family, series in the order of the points. A point's label set is
// formatted once for all of its samples: a scrape of 10,000 cubes has
// 150,000 series, and a registry's per-series checks and formatting would
// take most of the scrape's time.
func WriteText(w *bufio.Writer, points []Point) error {
	type ref struct{ point, sample int32 }
	byFamily := map[*Family][]ref{}
	var families []*Family
	var labelBuf []byte
	labelEnd := make([]int, len(points)) // labels of point i: labelBuf[labelEnd[i-1]:labelEnd[i]]
	for i, p := range points {
		labelBuf = appendLabels(labelBuf, p.Labels)
		labelEnd[i] = len(labelBuf)
		for j, s := range p.Samples {
			refs, seen := byFamily[s.Family]
			if !seen {
				families = append(families, s.Family)
			}
			byFamily[s.Family] = append(refs, ref{int32(i), int32(j)})
		}
	}
	slices.SortFunc(families, func(a, b *Family) int { return strings.Compare(a.FullName(), b.FullName()) })
	var num []byte
	for _, f := range families {
		name := f.FullName()
		typ := "counter"
		switch {
		case f.Histogram:
			typ = "histogram"
		case f.Gauge:
			typ = "gauge"
		}
		w.WriteString("# HELP " + name + " " + helpEscaper.Replace(f.Help) + "\n# TYPE " + name + " " + typ + "\n")
		for _, r := range byFamily[f] {
			start := 0
			if r.point > 0 {
				start = labelEnd[r.point-1]
			}
			if f.Histogram {
				writeHistogram(w, name, labelBuf[start:labelEnd[r.point]], points[r.point].Samples[r.sample].Hist, num)
				continue
			}
			w.WriteString(name)
			w.Write(labelBuf[start:labelEnd[r.point]])
			w.WriteByte(' ')
			w.Write(appendValue(num[:0], f, points[r.point].Samples[r.sample]))
			w.WriteByte('\n')
		}
	}
	return w.Flush()
}

// appendValue formats a sample's value as the text format has it: an
// exact integer for counts, Go's shortest float otherwise, NaN and ±Inf
// spelt as Prometheus spells them.
func appendValue(b []byte, f *Family, s Sample) []byte {
	if !f.Float {
		return strconv.AppendUint(b, s.Value, 10)
	}
	switch {
	case math.IsNaN(s.Float):
		return append(b, "NaN"...)
	case math.IsInf(s.Float, 1):
		return append(b, "+Inf"...)
	case math.IsInf(s.Float, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, s.Float, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// appendLabels formats a label set as {name="value",...} (nothing when
// there are no labels).
func appendLabels(b []byte, ls []Label) []byte {
	if len(ls) == 0 {
		return b
	}
	b = append(b, '{')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l.Name...)
		b = append(b, '=', '"')
		if strings.ContainsAny(l.Value, "\\\n\"") {
			b = append(b, valueEscaper.Replace(l.Value)...)
		} else {
			b = append(b, l.Value...)
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// writeHistogram writes one histogram's series: a bucket per bound and
// +Inf (labels plus le), the sum and the count.
func writeHistogram(w *bufio.Writer, name string, labels []byte, h *cube.Histogram, num []byte) {
	if h == nil {
		return
	}
	bucket := func(le string, n uint64) {
		w.WriteString(name + "_bucket")
		if len(labels) > 0 {
			w.Write(labels[:len(labels)-1])
			w.WriteString(`,le="` + le + `"}`)
		} else {
			w.WriteString(`{le="` + le + `"}`)
		}
		w.WriteByte(' ')
		w.Write(strconv.AppendUint(num[:0], n, 10))
		w.WriteByte('\n')
	}
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			bucket(strconv.FormatFloat(b, 'g', -1, 64), h.Counts[i])
		}
	}
	bucket("+Inf", h.Count)
	w.WriteString(name + "_sum")
	w.Write(labels)
	w.WriteByte(' ')
	w.Write(strconv.AppendFloat(num[:0], h.Sum, 'g', -1, 64))
	w.WriteString("\n" + name + "_count")
	w.Write(labels)
	w.WriteByte(' ')
	w.Write(strconv.AppendUint(num[:0], h.Count, 10))
	w.WriteByte('\n')
}
