/* An hwloc XML export rewritten into the form hwloc's own XML parser reads.
 *
 * fabric-topo hands exports to hwloc's built-in ("minimalistic") parser,
 * never to its libxml2 plugin: the plugin may be absent, prints its errors
 * on stderr, and stops reading an object's children at the first comment
 * among them (what follows is silently lost). The built-in parser reads
 * only what hwloc itself writes, so an export a person annotated or a tool
 * re-indented is refused by it. This rewrite gives it that form:
 *
 *  - comments and processing instructions dropped wherever XML allows them
 *    (before, inside and after the root, across lines), with the XML
 *    declaration and the DOCTYPE (an internal subset included);
 *  - CDATA sections read as the text they hold;
 *  - every tag written as hwloc writes it: one blank before each attribute,
 *    double quotes, every entity and character reference resolved and the
 *    value escaped again with the five escapes hwloc's parser knows
 *    (&quot; &lt; &gt; &amp; and &#10; &#13; &#9;); white space written
 *    literally inside a value reads as one blank each, as XML says;
 *  - a 3.x export (hwloc 3.0) in the 2.x form: the root's version given as
 *    "2.0" (hwloc 2.x refuses the number); each OS device's osdev_type, a
 *    bitmask in 3.0 (network 16, network + OpenFabrics 48, GPU +
 *    co-processor 12), given as the one number 2.x reads (hwloc 2.x would
 *    take 48 for no known kind and lose every RDMA device and interface
 *    name); the topology's infos (HostName, ...), which 3.0 writes after
 *    the root object, moved into the root object where 2.x reads them.
 *    What else 3.0 adds (the prog-if byte of pci_type, pci_locality,
 *    subtypes) 2.x passes over, and fabric-topo does not need;
 *  - CR LF and lone CR line ends read as LF.
 *
 * What XML itself forbids is refused, as lstopo refuses it, with the line
 * it is on: '--' inside a comment, '<' in an attribute value, an entity XML
 * does not define, a tag not closed or closed by another name, an XML
 * declaration that does not open the document, text outside the root. */
#ifndef FB_DOCTOR_TOPO_XML_H
#define FB_DOCTOR_TOPO_XML_H

#include <stddef.h>

#include "core/status.h"
#include "core/text.h"

/* Appends the rewritten document to out. `text` is NUL-terminated, `len`
 * bytes without NUL bytes; `what` names it in errors (FB_ERR_INPUT, one
 * line: the file, the line, the problem and the fix). */
enum fb_status fb_topo_xml_for_hwloc(const char *text, size_t len, const char *what,
                                     struct fb_str *out, struct fb_err *err);

#endif
