/*
 * The strict XML and YAML readers of hccn-topo import (tools/import/xml.c,
 * yaml.c): what they build from valid text, and the file:line message of
 * each kind of rejected input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tools/import/imp.h"
#include "tools/import/xml.h"
#include "tools/import/yaml.h"

static hccn_xml_el_t *xml(const char *text, char *err)
{
    return hccn_xml_parse(text, strlen(text), "t.xml", err);
}

static void test_xml_tree(void **state)
{
    (void)state;
    char err[HCCN_IMP_ERRLEN];
    hccn_xml_el_t *r = xml("<?xml version='1.0'?>\n"
                           "<!DOCTYPE platform SYSTEM \"x.dtd\">\n"
                           "<!-- a comment -->\n"
                           "<a x=\"1 &lt; 2\" y='&amp;&#65;'>\n"
                           "  <b/>\n  <c z=\"&quot;\"><d/></c>\n</a>\n", err);
    assert_non_null(r);
    assert_string_equal(r->name, "a");
    assert_int_equal(r->line, 4);
    assert_string_equal(hccn_xml_get(r, "x"), "1 < 2");
    assert_string_equal(hccn_xml_get(r, "y"), "&A");
    assert_null(hccn_xml_get(r, "w"));
    assert_int_equal(r->nkids, 2);
    assert_string_equal(r->kids[0]->name, "b");
    assert_int_equal(r->kids[1]->line, 6);
    assert_string_equal(hccn_xml_get(r->kids[1], "z"), "\"");
    assert_string_equal(r->kids[1]->kids[0]->name, "d");
    assert_ptr_equal(r->kids[1]->kids[0]->parent, r->kids[1]);
    static const char *const ok[] = {"x", "y", NULL}, *const no[] = {"x", NULL};
    assert_int_equal(hccn_xml_allow(r, ok, "t.xml", err), 0);
    assert_int_equal(hccn_xml_allow(r, no, "t.xml", err), -1);
    assert_string_equal(err, "t.xml:4: <a>: unknown attribute 'y' (allowed: x)");
    hccn_xml_free(r);
}

static void test_xml_errors(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"<a>\n<b>\n</a>", "t.xml:3: </a>: does not close <b> of line 2"},
        {"<a>\n<b/>", "t.xml:2: <a> of line 1: not closed before the end"},
        {"<!DOCTYPE a [<!ENTITY e \"x\">]><a/>", "t.xml:1: DOCTYPE: an internal DTD"},
        {"<a x=\"&e;\"/>", "t.xml:1: attribute value: an entity other"},
        {"<a x=\"1\" x=\"2\"/>", "t.xml:1: a: duplicate attribute"},
        {"<a>text</a>", "t.xml:1: text: text content is not supported"},
        {"<a/><b/>", "t.xml:1: document: a second root element"},
        {"<a><![CDATA[x]]></a>", "t.xml:1: CDATA: not supported"},
        {"<a>\n<?pi x?></a>", "t.xml:2: processing instruction"},
        {"<a x=1/>", "t.xml:1: a: an attribute value must be quoted"},
        {"<a><!-- x -- y --></a>", "t.xml:1: comment: '--' inside a comment"},
        {"", "t.xml:1: document: no root element"},
    };
    char err[HCCN_IMP_ERRLEN];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_null(xml(cases[i][0], err));
        if (strncmp(err, cases[i][1], strlen(cases[i][1])) != 0)
            fail_msg("case %zu: got '%s', expected '%s...'", i, err,
                     cases[i][1]);
    }
    /* 65 levels of nesting */
    char deep[65 * 3 + 65 * 4 + 1] = "";
    for (int i = 0; i < 65; i++)
        strcat(deep, "<a>");
    for (int i = 0; i < 65; i++)
        strcat(deep, "</a>");
    assert_null(xml(deep, err));
    assert_non_null(strstr(err, "nested deeper than 64"));
}

static void test_yaml(void **state)
{
    (void)state;
    const char *text = "---\n# comment\ntopology: [ Ring, Switch ]  # c\n"
                       "npus_count:\n  - 4\n  - 8\n\nname: x1\nempty: []\n";
    char err[HCCN_IMP_ERRLEN];
    hccn_yaml_doc_t d;
    assert_int_equal(hccn_yaml_parse(text, strlen(text), "t.yml", &d, err), 0);
    assert_int_equal(d.n, 4);
    const hccn_yaml_entry_t *e = hccn_yaml_get(&d, "topology");
    assert_int_equal(e->is_list, 1);
    assert_int_equal(e->nitems, 2);
    assert_string_equal(e->items[1], "Switch");
    assert_int_equal(e->line, 3);
    e = hccn_yaml_get(&d, "npus_count");
    assert_int_equal(e->nitems, 2);
    assert_string_equal(e->items[0], "4");
    assert_int_equal(e->item_lines[1], 6);
    assert_string_equal(hccn_yaml_get(&d, "name")->scalar, "x1");
    assert_int_equal(hccn_yaml_get(&d, "empty")->nitems, 0);
    hccn_yaml_free(&d);
}

static void test_yaml_errors(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"a: 1\na: 2\n", "t.yml:2: duplicate key"},
        {"a: [1, 2\n", "t.yml:1: a flow list must close"},
        {"a:\n  b: 1\n", "t.yml:2: unsupported YAML (nested"},
        {"a: &x 1\n", "t.yml:1: unsupported YAML"},
        {"a: \"q\"\n", "t.yml:1: unsupported YAML"},
        {"a:\n\t- 1\n", "t.yml:2: tabs are not allowed"},
        {"  - 1\n", "t.yml:1: a '- item' line must follow 'key:'"},
        {"a: [1, [2]]\n", "t.yml:1: unsupported YAML"},
        {"a:1\n", "t.yml:1: expected a space after ':'"},
        {"just text\n", "t.yml:1: expected 'key: value'"},
        {"a: 1\n---\nb: 2\n", "t.yml:2: a second document"},
    };
    char err[HCCN_IMP_ERRLEN];
    hccn_yaml_doc_t d;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(hccn_yaml_parse(cases[i][0], strlen(cases[i][0]),
                                         "t.yml", &d, err), -1);
        if (strncmp(err, cases[i][1], strlen(cases[i][1])) != 0)
            fail_msg("case %zu: got '%s', expected '%s...'", i, err,
                     cases[i][1]);
    }
}

static void test_sniff(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"<?xml version='1.0'?>\n<system version=\"1\"/>", "nccl-xml"},
        {"\n<platform version=\"4.1\"/>", "simgrid"},
        {"{\"server_list\": []}", "hccl-ranktable"},
        {"\tGPU0\tGPU1\n", "nvidia-smi"},
        {"topology: [ Ring ]\nnpus_count: [ 2 ]\n", "astrasim"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(hccn_imp_sniff(cases[i][0], strlen(cases[i][0])),
                            cases[i][1]);
    assert_null(hccn_imp_sniff("hello", 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_tree),
        cmocka_unit_test(test_xml_errors),
        cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
