/* sysprof-names: names every sampled address of a capture with Sysprof
 * 3.46's own SysprofCaptureSymbolResolver (libsysprof-4), which reads only
 * the capture's __symbols__ bundle, and prints one line per distinct
 * (pid, name, tag) with its count of frames:
 *
 *   PID<TAB>COUNT<TAB>NAME<TAB>TAG
 *
 * It is the oracle that Sysprof's tools see the names nsprof bundles. */
#include <stdio.h>
#include <sysprof.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: sysprof-names CAPTURE\n");
		return 2;
	}
	SysprofCaptureReader *reader = sysprof_capture_reader_new(argv[1]);
	if (reader == NULL) {
		fprintf(stderr, "sysprof-names: cannot open %s\n", argv[1]);
		return 1;
	}
	SysprofSymbolResolver *resolver = sysprof_capture_symbol_resolver_new();
	sysprof_symbol_resolver_load(resolver, reader);
	sysprof_capture_reader_reset(reader);

	GHashTable *counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	SysprofCaptureFrameType type;
	while (sysprof_capture_reader_peek_type(reader, &type)) {
		if (type != SYSPROF_CAPTURE_FRAME_SAMPLE) {
			if (!sysprof_capture_reader_skip(reader))
				break;
			continue;
		}
		const SysprofCaptureSample *s = sysprof_capture_reader_read_sample(reader);
		if (s == NULL)
			break;
		SysprofAddressContext ctx = SYSPROF_ADDRESS_CONTEXT_NONE;
		for (guint i = 0; i < s->n_addrs; i++) {
			SysprofAddressContext c;
			if (sysprof_address_is_context_switch(s->addrs[i], &c)) {
				ctx = c;
				continue;
			}
			GQuark tag = 0;
			gchar *name = sysprof_symbol_resolver_resolve_with_context(resolver, s->frame.time, s->frame.pid, ctx, s->addrs[i], &tag);
			if (name == NULL)
				continue;
			gchar *key = g_strdup_printf("%d\t%s\t%s", s->frame.pid, name, tag ? g_quark_to_string(tag) : "");
			g_free(name);
			gpointer n = g_hash_table_lookup(counts, key);
			g_hash_table_replace(counts, key, GSIZE_TO_POINTER(GPOINTER_TO_SIZE(n) + 1));
		}
	}
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, counts);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		const char *key = k;
		const char *tab = strchr(key, '\t');
		printf("%.*s\t%zu\t%s\n", (int)(tab - key), key, GPOINTER_TO_SIZE(v), tab + 1);
	}
	g_hash_table_unref(counts);
	g_object_unref(resolver);
	sysprof_capture_reader_unref(reader);
	return 0;
}
