/* gtk4app: a GTK 4 window that redraws every 16 ms and quits after 1.5 s,
 * for TestRecordGTKMarks: GTK writes its profiler marks (frame clock,
 * layout, snapshot) through libsysprof-capture's collector when the
 * process has SYSPROF_CONTROL_FD. Run it under any GDK backend that works
 * headless (GDK_BACKEND=broadway with gtk4-broadwayd). */
#include <gtk/gtk.h>

static gboolean quit_cb(gpointer app) {
	g_application_quit(G_APPLICATION(app));
	return G_SOURCE_REMOVE;
}

static gboolean redraw(gpointer w) {
	gtk_widget_queue_draw(GTK_WIDGET(w));
	return G_SOURCE_CONTINUE;
}

static void activate(GtkApplication *app, gpointer data) {
	GtkWidget *win = gtk_application_window_new(app);
	GtkWidget *label = gtk_label_new("nsprof");
	gtk_window_set_child(GTK_WINDOW(win), label);
	gtk_window_present(GTK_WINDOW(win));
	g_timeout_add(16, redraw, label);
	g_timeout_add(1500, quit_cb, app);
}

int main(int argc, char **argv) {
	GtkApplication *app = gtk_application_new(NULL, G_APPLICATION_NON_UNIQUE);
	g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
	return g_application_run(G_APPLICATION(app), argc, argv);
}
