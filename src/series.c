/* A device's readings over time (series.h): the graph-data records of the
 * platform read into plain arrays, and the small questions asked of them. */
#include "series.h"

#include <stdlib.h>
#include <string.h>

int series_channel_index(const struct series *s, int num)
{
    for (size_t i = 0; i < s->n_channels; i++)
        if (s->channels[i].num == num)
            return (int)i;
    return -1;
}

bool series_follows(const struct series_point *a, const struct series_point *b)
{
    if (a->data_id < 0 || b->data_id < 0)
        return true;
    return b->data_id == (a->data_id + 1) % 65536;
}

void series_free(struct series *s)
{
    if (!s)
        return;
    free(s->serial);
    free(s->model);
    free(s->name);
    free(s->base_serial);
    for (size_t i = 0; i < s->n_channels; i++) {
        free(s->channels[i].name);
        free(s->channels[i].unit);
    }
    free(s->points);
    memset(s, 0, sizeof *s);
}
