package einvoice

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/billingd/billing"
	"github.com/billingd/billing/render"
)

// Factur-X / ZUGFeRD: the document's PDF, as package render draws it, made
// a PDF/A-3 that carries the CII invoice as the embedded file factur-x.xml.
//
// How: gopdf (which draws the pages) writes no PDF/A and no attachments, so
// its output is rewritten here, object by object. gopdf writes a classic
// cross-reference table whose offsets are exact; every object is copied
// byte for byte (so the pages, fonts and text are exactly those of the
// plain PDF) but for annotations (a payment link's), which get the print
// flag PDF/A requires of them (/F 4: gopdf writes none), the catalog is replaced by one that adds what PDF/A-3 and
// Factur-X require (the XMP metadata, an sRGB output intent, the embedded
// file in the EmbeddedFiles name tree and in /AF with /AFRelationship), and
// a new cross-reference table and trailer are written (with the document
// information as an indirect object and a file identifier, which gopdf
// leaves out). A rewrite rather than an incremental update, because gopdf's
// own cross-reference table is malformed (its first entry has 7 digits, not
// 10) and its document information is inline in the trailer: both would
// stay in an updated file, and strict PDF/A readers refuse them. No Go
// library writes PDF/A-3 attachments without a second PDF writer beside
// gopdf (pdfcpu can attach files but writes no PDF/A); this file is about
// 300 lines we understand.

// FacturXFilename is the name of the embedded CII file (Factur-X 1.0,
// ZUGFeRD 2.1 and later).
const FacturXFilename = "factur-x.xml"

// WriteFacturX writes the Factur-X PDF of d: its rendered PDF as PDF/A-3b
// with inv written as CII (always under EN 16931, the Factur-X profile
// EN 16931, never as XRechnung) embedded as factur-x.xml.
func WriteFacturX(d *billing.PrintableDocument, inv *Invoice) ([]byte, error) {
	pdf, err := render.PDF(d)
	if err != nil {
		return nil, err
	}
	return facturX(d, inv, pdf)
}

// facturX is WriteFacturX with d's PDF rendered.
func facturX(d *billing.PrintableDocument, inv *Invoice, pdf []byte) ([]byte, error) {
	xmlData, err := writeCII(inv, specEN16931, false)
	if err != nil {
		return nil, err
	}
	return embed(pdf, xmlData, pdfInfo{
		title: strings.TrimSpace(titleOf(d) + " " + d.Number()), author: d.Merchant.LegalCompanyName, date: d.Date.UTC(),
	})
}

// titleOf is the document's title as the PDF prints it.
func titleOf(d *billing.PrintableDocument) string {
	if d.Kind == billing.DocumentCreditNote {
		return "Credit note"
	}
	return "Invoice"
}

// pdfInfo is the document information, written both in the information
// dictionary and in the XMP metadata (PDF/A requires them to agree).
type pdfInfo struct {
	title, author string
	date          time.Time
}

// The parts of gopdf's output the rewrite reads.
var (
	reStartXref = regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`)
	reRoot      = regexp.MustCompile(`/Root\s+(\d+)\s+0\s+R`)
	reSize      = regexp.MustCompile(`/Size\s+(\d+)`)
)

// object is one object of the source PDF: its number and its bytes from
// "N 0 obj" to "endobj".
type object struct {
	num  int
	body []byte
}

// readObjects splits a PDF with one classic cross-reference table (gopdf's
// output) into its objects, and returns them with the catalog's number and
// the table's size.
func readObjects(pdf []byte) (objs []object, root, size int, err error) {
	m := reStartXref.FindSubmatch(pdf)
	if m == nil {
		return nil, 0, 0, errors.New("einvoice: the PDF has no startxref")
	}
	xrefAt, _ := strconv.Atoi(string(m[1]))
	if xrefAt <= 0 || xrefAt >= len(pdf) || !bytes.HasPrefix(pdf[xrefAt:], []byte("xref")) {
		return nil, 0, 0, errors.New("einvoice: the PDF's startxref does not point at a cross-reference table")
	}
	tail := pdf[xrefAt:]
	trailerAt := bytes.Index(tail, []byte("trailer"))
	if trailerAt < 0 {
		return nil, 0, 0, errors.New("einvoice: the PDF has no trailer")
	}
	lines := strings.Split(strings.TrimSpace(string(tail[len("xref"):trailerAt])), "\n")
	if len(lines) < 2 {
		return nil, 0, 0, errors.New("einvoice: empty cross-reference table")
	}
	var first, count int
	if _, err := fmt.Sscanf(lines[0], "%d %d", &first, &count); err != nil || first != 0 || count != len(lines)-1 {
		return nil, 0, 0, fmt.Errorf("einvoice: unexpected cross-reference section %q", lines[0])
	}
	type at struct{ num, off int }
	var offs []at
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "n" {
			continue
		}
		off, err := strconv.Atoi(f[0])
		if err != nil || off <= 0 || off >= xrefAt {
			return nil, 0, 0, fmt.Errorf("einvoice: bad cross-reference entry %q", l)
		}
		offs = append(offs, at{i, off})
	}
	slices.SortFunc(offs, func(a, b at) int { return a.off - b.off })
	for i, o := range offs {
		end := xrefAt
		if i+1 < len(offs) {
			end = offs[i+1].off
		}
		body := bytes.TrimRight(pdf[o.off:end], " \r\n\t")
		if !bytes.HasPrefix(body, []byte(fmt.Sprintf("%d 0 obj", o.num))) || !bytes.HasSuffix(body, []byte("endobj")) {
			return nil, 0, 0, fmt.Errorf("einvoice: object %d is not where the cross-reference table says", o.num)
		}
		objs = append(objs, object{num: o.num, body: body})
	}
	slices.SortFunc(objs, func(a, b object) int { return a.num - b.num })
	trailer := tail[trailerAt:]
	rm, sm := reRoot.FindSubmatch(trailer), reSize.FindSubmatch(trailer)
	if rm == nil || sm == nil {
		return nil, 0, 0, errors.New("einvoice: the PDF's trailer has no /Root or /Size")
	}
	root, _ = strconv.Atoi(string(rm[1]))
	size, _ = strconv.Atoi(string(sm[1]))
	return objs, root, size, nil
}

// embed rewrites pdf as a PDF/A-3b carrying xmlData as factur-x.xml.
//
// Long on purpose: the new objects, the catalog and the cross-reference
// table are numbered together; apart, the numbers would be passed around.
func embed(pdf, xmlData []byte, info pdfInfo) ([]byte, error) {
	objs, root, size, err := readObjects(pdf)
	if err != nil {
		return nil, err
	}
	catalogAt := slices.IndexFunc(objs, func(o object) bool { return o.num == root })
	if catalogAt < 0 {
		return nil, errors.New("einvoice: the PDF's catalog is missing")
	}
	cat := objs[catalogAt].body
	open, end := bytes.Index(cat, []byte("<<")), bytes.LastIndex(cat, []byte(">>"))
	if open < 0 || end < open {
		return nil, errors.New("einvoice: the PDF's catalog is not a dictionary")
	}
	entries := string(cat[open+2 : end])
	for _, k := range []string{"/Metadata", "/Names", "/AF", "/OutputIntents"} {
		if strings.Contains(entries, k) {
			return nil, fmt.Errorf("einvoice: the PDF's catalog already has %s", k)
		}
	}
	n := size // the numbers of the new objects
	fileObj, specObj, metaObj, intentObj, iccObj, infoObj := n, n+1, n+2, n+3, n+4, n+5
	date := pdfDate(info.date)

	var zipped bytes.Buffer
	zw := zlib.NewWriter(&zipped)
	zw.Write(xmlData)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	added := []object{
		{fileObj, streamObject(fileObj, fmt.Sprintf("/Type /EmbeddedFile /Subtype /text#2Fxml /Filter /FlateDecode /Params << /Size %d /ModDate %s >>",
			len(xmlData), date), zipped.Bytes())},
		{specObj, []byte(fmt.Sprintf("%d 0 obj\n<< /Type /Filespec /F (%s) /UF (%s) /Desc (Factur-X invoice) /AFRelationship /Alternative /EF << /F %d 0 R /UF %d 0 R >> >>\nendobj",
			specObj, FacturXFilename, FacturXFilename, fileObj, fileObj))},
		{metaObj, streamObject(metaObj, "/Type /Metadata /Subtype /XML", xmpPacket(info))},
		{intentObj, []byte(fmt.Sprintf("%d 0 obj\n<< /Type /OutputIntent /S /GTS_PDFA1 /OutputConditionIdentifier (sRGB IEC61966-2.1) /Info (sRGB IEC61966-2.1) /DestOutputProfile %d 0 R >>\nendobj",
			intentObj, iccObj))},
		{iccObj, streamObject(iccObj, "/N 3", srgbProfile())},
		{infoObj, []byte(fmt.Sprintf("%d 0 obj\n<< /Title %s /Author %s /Creator %s /Producer %s /CreationDate %s >>\nendobj",
			infoObj, pdfText(info.title), pdfText(info.author), pdfText("billingd"), pdfText("billingd"), date))},
	}
	objs[catalogAt].body = []byte(fmt.Sprintf("%d 0 obj\n<<%s  /Metadata %d 0 R\n  /Names << /EmbeddedFiles << /Names [(%s) %d 0 R] >> >>\n  /AF [%d 0 R]\n  /OutputIntents [%d 0 R]\n>>\nendobj",
		root, entries, metaObj, FacturXFilename, specObj, specObj, intentObj))
	objs = append(objs, added...)

	var out bytes.Buffer
	out.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, infoObj+1)
	for _, o := range objs {
		offsets[o.num] = out.Len()
		out.Write(printFlagged(o.body))
		out.WriteString("\n")
	}
	xrefAt := out.Len()
	fmt.Fprintf(&out, "xref\n0 %d\n0000000000 65535 f\r\n", infoObj+1)
	for num := 1; num <= infoObj; num++ {
		if offsets[num] == 0 {
			out.WriteString("0000000000 65535 f\r\n")
			continue
		}
		fmt.Fprintf(&out, "%010d 00000 n\r\n", offsets[num])
	}
	id := md5.Sum(pdf)
	fmt.Fprintf(&out, "trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R /ID [<%x> <%x>] >>\nstartxref\n%d\n%%%%EOF\n",
		infoObj+1, root, infoObj, id, id, xrefAt)
	return out.Bytes(), nil
}

// printFlagged returns body, an object, with the print flag /F 4 added when
// it is an annotation without flags (PDF/A: every annotation is printed).
func printFlagged(body []byte) []byte {
	const annot = "/Type /Annot "
	if !bytes.Contains(body, []byte(annot)) || bytes.Contains(body, []byte("stream")) || bytes.Contains(body, []byte("/F ")) {
		return body
	}
	return bytes.Replace(body, []byte(annot), []byte(annot+"/F 4 "), 1)
}

// streamObject writes a stream object with dict's entries and its length.
func streamObject(num int, dict string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d 0 obj\n<< %s /Length %d >>\nstream\n", num, dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream\nendobj")
	return b.Bytes()
}

// pdfDate is t as a PDF date.
func pdfDate(t time.Time) string {
	return "(D:" + t.UTC().Format("20060102150405") + "+00'00')"
}

// pdfText is s as a PDF text string: UTF-16BE with its byte order mark, in
// hex.
func pdfText(s string) string {
	var b strings.Builder
	b.WriteString("<FEFF")
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, "%04X", u)
	}
	b.WriteString(">")
	return b.String()
}

// xmpPacket is the XMP metadata: PDF/A-3B identification, the document
// information, and the Factur-X extension schema (with the description
// PDF/A requires of any extension schema).
func xmpPacket(info pdfInfo) []byte {
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	date := info.date.UTC().Format("2006-01-02T15:04:05Z")
	return []byte(`<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">
<pdfaid:part>3</pdfaid:part>
<pdfaid:conformance>B</pdfaid:conformance>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">` + esc(info.title) + `</rdf:li></rdf:Alt></dc:title>
<dc:creator><rdf:Seq><rdf:li>` + esc(info.author) + `</rdf:li></rdf:Seq></dc:creator>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
<xmp:CreatorTool>billingd</xmp:CreatorTool>
<xmp:CreateDate>` + date + `</xmp:CreateDate>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
<pdf:Producer>billingd</pdf:Producer>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#">
<fx:DocumentType>INVOICE</fx:DocumentType>
<fx:DocumentFileName>` + FacturXFilename + `</fx:DocumentFileName>
<fx:Version>1.0</fx:Version>
<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">
<pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType="Resource">
<pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>
<pdfaSchema:namespaceURI>urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#</pdfaSchema:namespaceURI>
<pdfaSchema:prefix>fx</pdfaSchema:prefix>
<pdfaSchema:property><rdf:Seq>
<rdf:li rdf:parseType="Resource"><pdfaProperty:name>DocumentFileName</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The name of the embedded XML document</pdfaProperty:description></rdf:li>
<rdf:li rdf:parseType="Resource"><pdfaProperty:name>DocumentType</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The type of the hybrid document in capital letters, e.g. INVOICE or ORDER</pdfaProperty:description></rdf:li>
<rdf:li rdf:parseType="Resource"><pdfaProperty:name>Version</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The actual version of the standard applying to the embedded XML document</pdfaProperty:description></rdf:li>
<rdf:li rdf:parseType="Resource"><pdfaProperty:name>ConformanceLevel</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The conformance level of the embedded XML document</pdfaProperty:description></rdf:li>
</rdf:Seq></pdfaSchema:property>
</rdf:li></rdf:Bag></pdfaExtension:schemas>
</rdf:Description>
</rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`)
}

// srgbProfile returns a small ICC version 2 display profile of sRGB (D50
// colorants, gamma 2.2 curves) for the PDF/A output intent, built here
// rather than shipped as a file.
func srgbProfile() []byte {
	s15 := func(f float64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(f*65536+0.5))) }
	xyz := func(x, y, z float64) []byte {
		b := append([]byte("XYZ "), 0, 0, 0, 0)
		return append(append(append(b, s15(x)...), s15(y)...), s15(z)...)
	}
	desc := append([]byte("desc"), 0, 0, 0, 0)
	name := "sRGB IEC61966-2.1 (billingd)\x00"
	desc = binary.BigEndian.AppendUint32(desc, uint32(len(name)))
	desc = append(desc, name...)
	desc = append(desc, make([]byte, 4+4+2+1+67)...)
	cprt := append(append([]byte("text"), 0, 0, 0, 0), "No copyright, use freely\x00"...)
	curv := append(append([]byte("curv"), 0, 0, 0, 0), 0, 0, 0, 1, 0x02, 0x33)
	tags := []struct {
		sig  string
		data []byte
	}{
		{"desc", desc}, {"cprt", cprt}, {"wtpt", xyz(0.9642, 1, 0.8249)},
		{"rXYZ", xyz(0.4361, 0.2225, 0.0139)}, {"gXYZ", xyz(0.3851, 0.7169, 0.0971)}, {"bXYZ", xyz(0.1431, 0.0606, 0.7141)},
		{"rTRC", curv}, {"gTRC", curv}, {"bTRC", curv},
	}
	table := 4 + 12*len(tags)
	var body []byte
	var entries []byte
	entries = binary.BigEndian.AppendUint32(entries, uint32(len(tags)))
	for _, t := range tags {
		for (128+table+len(body))%4 != 0 {
			body = append(body, 0)
		}
		entries = append(entries, t.sig...)
		entries = binary.BigEndian.AppendUint32(entries, uint32(128+table+len(body)))
		entries = binary.BigEndian.AppendUint32(entries, uint32(len(t.data)))
		body = append(body, t.data...)
	}
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	size := 128 + table + len(body)
	h := make([]byte, 128)
	binary.BigEndian.PutUint32(h[0:], uint32(size))
	binary.BigEndian.PutUint32(h[8:], 0x02100000)
	copy(h[12:], "mntr")
	copy(h[16:], "RGB ")
	copy(h[20:], "XYZ ")
	binary.BigEndian.PutUint16(h[24:], 2026)
	binary.BigEndian.PutUint16(h[26:], 1)
	binary.BigEndian.PutUint16(h[28:], 1)
	copy(h[36:], "acsp")
	copy(h[68:], s15(0.9642))
	copy(h[72:], s15(1))
	copy(h[76:], s15(0.8249))
	return append(append(h, entries...), body...)
}
