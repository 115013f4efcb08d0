/* The fast path's column rules in C: an optional accelerator of prime_rl_dynamo.validate.

   validate.py decodes a discovery body into its msgspec models (types, lengths and bounds are
   checked there, in C), then judges what msgspec cannot express: the order of identities, the
   request-plane URLs, the namespace scope, routes strictly increasing, the error-worker rules,
   admin_base_url with world_size, the URL patterns and unique admin endpoints. In Python those
   rules cost as much as the decode itself; here they are one loop over the decoded workers.

   The contract with validate.py is one-sided, so this file can never change a verdict:
   columns_hold() answers the number of JSON strings the snapshot was decoded from only when
   every rule certainly holds, exactly as validate._columns_hold would; in every other case
   (a rule broken, or anything it does not judge itself: a non-canonical admin URL, a non-ASCII
   identity) it answers None, and validate.py asks its own Python rules. The differential tests
   in tests/test_speedups.py hold the two to that. Without a C compiler the package is pure
   Python and gives the same verdicts, at the price measured in docs/bench.md.

   For a body with defects, the located path's typed tier builds the violations here too:
   property_violations() is validate._property_violations (each flagged member judged by the
   schema's checks, which validate.py hands over; an int against its bounds judged here), and
   violation() and label() build its objects and texts as validate.py's Python twins do. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* validate.py uses this module only when it says the ABI validate.py was written against. */
#define SPEEDUPS_ABI 6

enum { NS, COMP, EP, IID, TRANSPORT, RPU, ROUTES, SYSTEM, ADMIN, MODEL, SIZE, ERROR, N_FIELDS };
#define N_TRANSPORT 3

/* The models a worker may be decoded into (validate.Worker, and validate._TypedWorker: the same
   fields with their JSON types alone), where each keeps its fields, and the transport's model. */
#define N_MODELS 2
static PyTypeObject *worker_types[N_MODELS];
static Py_ssize_t worker_offsets[N_MODELS][N_FIELDS];
static PyTypeObject *transport_type = NULL;
static Py_ssize_t transport_offset[N_TRANSPORT];

/* ---------------------------------------------------------------------------------------- */
/* configure(): where each field of the models lives, read off their member descriptors */

static int read_offsets(PyTypeObject *type, PyObject *descriptors, Py_ssize_t *out, Py_ssize_t n)
{
    if (!PyTuple_Check(descriptors) || PyTuple_GET_SIZE(descriptors) != n) {
        PyErr_Format(PyExc_TypeError, "expected a tuple of %zd member descriptors", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(descriptors, i);
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "a field is not a member descriptor");
            return -1;
        }
        PyMemberDescrObject *member = (PyMemberDescrObject *)d;
        int kind = member->d_member->type;
        Py_ssize_t offset = member->d_member->offset;
        if (member->d_common.d_type != type || (kind != T_OBJECT_EX && kind != T_OBJECT) ||
            offset < (Py_ssize_t)sizeof(PyObject) ||
            offset + (Py_ssize_t)sizeof(PyObject *) > type->tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "a field is not an object slot of its model");
            return -1;
        }
        out[i] = offset;
    }
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args)
{
    PyObject *transport, *transport_fields, *models;
    if (!PyArg_ParseTuple(args, "O!OO!", &PyType_Type, &transport, &transport_fields,
                          &PyTuple_Type, &models))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(models);
    if (n < 1 || n > N_MODELS) {
        PyErr_Format(PyExc_TypeError, "expected 1 to %d (model, fields) pairs", N_MODELS);
        return NULL;
    }
    PyTypeObject *types[N_MODELS] = {NULL};
    Py_ssize_t offsets[N_MODELS][N_FIELDS], t[N_TRANSPORT];
    if (read_offsets((PyTypeObject *)transport, transport_fields, t, N_TRANSPORT) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(models, i), *model;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyType_Check(model = PyTuple_GET_ITEM(pair, 0))) {
            PyErr_SetString(PyExc_TypeError, "expected (model, fields) pairs");
            return NULL;
        }
        if (read_offsets((PyTypeObject *)model, PyTuple_GET_ITEM(pair, 1), offsets[i], N_FIELDS) < 0)
            return NULL;
        types[i] = (PyTypeObject *)model;
    }
    for (int i = 0; i < N_MODELS; i++) {
        Py_XINCREF(types[i]);
        Py_XSETREF(worker_types[i], types[i]);
    }
    memcpy(worker_offsets, offsets, sizeof offsets);
    memcpy(transport_offset, t, sizeof t);
    Py_INCREF(transport);
    Py_XSETREF(transport_type, (PyTypeObject *)transport);
    Py_RETURN_NONE;
}

static inline PyObject *field(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

/* ---------------------------------------------------------------------------------------- */
/* The patterns, spelt as code (validate.py's regular expressions of the same names) */

/* Character classes, one table lookup each (filled by PyInit__speedups). */
enum { DIGIT = 1, LABEL = 2, HOST = 4, PATH = 8, PATH_END = 16 };
static unsigned char classes[256];

static void fill_classes(void)
{
    for (int c = 0; c < 256; c++) {
        int digit = c >= '0' && c <= '9';
        int label = (c >= 'a' && c <= 'z') || digit || c == '_' || c == '-';
        /* printable ASCII but space, #, %, ? and DEL; the last character is not / either */
        int path = c == 0x21 || c == 0x22 || c == 0x24 || (c >= 0x26 && c <= 0x3e) ||
                   (c >= 0x40 && c <= 0x7e);
        classes[c] = (unsigned char)((digit ? DIGIT : 0) | (label ? LABEL : 0) |
                                     (label || c == '.' ? HOST : 0) | (path ? PATH : 0) |
                                     (path && c != '/' ? PATH_END : 0));
    }
}

static inline int is_digit(unsigned char c) { return classes[c] & DIGIT; }

/* _OCTET four times, dot-separated: 0-255 without a leading zero. */
static int is_ipv4(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (int part = 0; part < 4; part++) {
        Py_ssize_t start = i;
        unsigned value = 0;
        while (i < n && is_digit(s[i]) && i - start < 4)
            value = value * 10 + (unsigned)(s[i++] - '0');
        Py_ssize_t len = i - start;
        if (len == 0 || len > 3 || (len > 1 && s[start] == '0') || value > 255)
            return 0;
        if (part < 3) {
            if (i >= n || s[i] != '.')
                return 0;
            i++;
        }
    }
    return i == n;
}

/* The name branch: labels of [a-z0-9_-]+ joined by dots, none starting xn--, the last not all
   digits. The caller has checked that every character is a label character or a dot. */
static int is_name(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t start = 0;
    while (1) {
        Py_ssize_t end = start;
        int digits_only = 1;
        while (end < n && s[end] != '.') {
            if (!is_digit(s[end]))
                digits_only = 0;
            end++;
        }
        if (end == start || (end - start >= 4 && memcmp(s + start, "xn--", 4) == 0))
            return 0;
        if (end == n)
            return !digits_only;
        start = end + 1;
    }
}

/* _CANONICAL_ADMIN: http(s)://host:port[/path], in the form LIST-6 compares. */
static int is_canonical_admin(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i;
    if (n >= 7 && memcmp(s, "http://", 7) == 0)
        i = 7;
    else if (n >= 8 && memcmp(s, "https://", 8) == 0)
        i = 8;
    else
        return 0;
    Py_ssize_t host = i;
    while (i < n && s[i] != ':') {
        if (!(classes[s[i]] & HOST))
            return 0;
        i++;
    }
    if (i == n || !(is_ipv4(s + host, i - host) || is_name(s + host, i - host)))
        return 0;
    Py_ssize_t port = ++i;
    unsigned long value = 0;
    while (i < n && is_digit(s[i]) && i - port < 6)
        value = value * 10 + (unsigned long)(s[i++] - '0');
    if (i == port || i - port > 5 || s[port] == '0' || value > 65535)
        return 0;
    if (i == n)
        return 1;
    if (s[i] != '/' || i + 1 == n || !(classes[s[n - 1]] & PATH_END))
        return 0;
    for (i++; i < n; i++)
        if (!(classes[s[i]] & PATH))
            return 0;
    return 1;
}

/* PATTERNS['Worker.system_url']: [Hh][Tt][Tt][Pp][Ss]?:// then a host that does not start with
   / ? # or :, and no control character, space or DEL anywhere after the scheme. */
static int is_system_url(PyObject *u)
{
    int kind = PyUnicode_KIND(u);
    const void *data = PyUnicode_DATA(u);
    Py_ssize_t n = PyUnicode_GET_LENGTH(u), i;
    static const char http[] = "http";
    if (n < 8)
        return 0;
    for (i = 0; i < 4; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c != (Py_UCS4)http[i] && c != (Py_UCS4)(http[i] - 32))
            return 0;
    }
    Py_UCS4 c = PyUnicode_READ(kind, data, 4);
    if (c == 's' || c == 'S')
        i = 5;
    if (i + 3 >= n || PyUnicode_READ(kind, data, i) != ':' ||
        PyUnicode_READ(kind, data, i + 1) != '/' || PyUnicode_READ(kind, data, i + 2) != '/')
        return 0;
    i += 3;
    c = PyUnicode_READ(kind, data, i);
    if (c == '/' || c == '?' || c == '#' || c == ':')
        return 0;
    for (; i < n; i++) {
        c = PyUnicode_READ(kind, data, i);
        if (c <= 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

/* request_plane_url == "dyn://" + ns + "." + comp + "." + ep, for ASCII strings; -1: unsure. */
static int plane_matches(PyObject *rpu, PyObject *ns, PyObject *comp, PyObject *ep)
{
    if (!PyUnicode_IS_COMPACT_ASCII(rpu) || !PyUnicode_IS_COMPACT_ASCII(ns) ||
        !PyUnicode_IS_COMPACT_ASCII(comp) || !PyUnicode_IS_COMPACT_ASCII(ep))
        return -1;
    Py_ssize_t a = PyUnicode_GET_LENGTH(ns), b = PyUnicode_GET_LENGTH(comp),
               c = PyUnicode_GET_LENGTH(ep);
    if (PyUnicode_GET_LENGTH(rpu) != 8 + a + b + c)
        return 0;
    const char *u = (const char *)PyUnicode_DATA(rpu);
    return memcmp(u, "dyn://", 6) == 0 && memcmp(u + 6, PyUnicode_DATA(ns), a) == 0 &&
           u[6 + a] == '.' && memcmp(u + 7 + a, PyUnicode_DATA(comp), b) == 0 &&
           u[7 + a + b] == '.' && memcmp(u + 8 + a + b, PyUnicode_DATA(ep), c) == 0;
}

/* Compare two strings as Python does (code point order): -1, 0, 1, or -2 on an error. ASCII
   strings compare byte by byte, with no call. */
static inline int compare(PyObject *a, PyObject *b)
{
    if (a == b)
        return 0;
    if (PyUnicode_IS_COMPACT_ASCII(a) && PyUnicode_IS_COMPACT_ASCII(b)) {
        Py_ssize_t m = PyUnicode_GET_LENGTH(a), n = PyUnicode_GET_LENGTH(b);
        int c = memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)(m < n ? m : n));
        if (c)
            return c < 0 ? -1 : 1;
        return m < n ? -1 : m > n;
    }
    int c = PyUnicode_Compare(a, b);
    if (c == -1 && PyErr_Occurred())
        return -2;
    return c;
}

/* ns.startswith(scope): 1, 0, or -1 on an error. */
static inline int starts_with(PyObject *ns, PyObject *scope)
{
    if (PyUnicode_IS_COMPACT_ASCII(ns) && PyUnicode_IS_COMPACT_ASCII(scope)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(scope);
        return PyUnicode_GET_LENGTH(ns) >= n && memcmp(PyUnicode_DATA(ns), PyUnicode_DATA(scope),
                                                      (size_t)n) == 0;
    }
    return (int)PyUnicode_Tailmatch(ns, scope, 0, PY_SSIZE_T_MAX, -1);
}

/* A set of ASCII strings (the admin URLs), open addressing: add() is 1 when new, 0 when the
   string is there already. Cheaper than a PySet, which would hash with SipHash. */
typedef struct {
    PyObject **slots;
    size_t mask;
} StringSet;

static int set_init(StringSet *set, Py_ssize_t n)
{
    size_t size = 16;
    while (size < 2 * (size_t)n)
        size <<= 1;
    set->slots = PyMem_Calloc(size, sizeof(PyObject *));
    set->mask = size - 1;
    return set->slots == NULL ? -1 : 0;
}

static inline uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        h = (h ^ word) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, (size_t)(n - i));
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 32);
}

static inline int set_add(StringSet *set, PyObject *u)
{
    const unsigned char *p = PyUnicode_DATA(u);
    Py_ssize_t n = PyUnicode_GET_LENGTH(u);
    size_t i = (size_t)hash_bytes(p, n) & set->mask;
    while (set->slots[i] != NULL) {
        PyObject *other = set->slots[i];
        if (PyUnicode_GET_LENGTH(other) == n && memcmp(PyUnicode_DATA(other), p, (size_t)n) == 0)
            return 0;
        i = (i + 1) & set->mask;
    }
    set->slots[i] = u;
    return 1;
}

/* An admin URL (a str) in the form LIST-6 compares, not in `admins` yet (added there, which
   holds at most n): 1 when so, 0 when not (the Python rules judge), -1 on an error. */
static inline int canonical(PyObject *admin)
{
    return PyUnicode_IS_COMPACT_ASCII(admin) &&
           is_canonical_admin((const unsigned char *)PyUnicode_DATA(admin),
                              PyUnicode_GET_LENGTH(admin));
}

static int canonical_and_new(StringSet *admins, PyObject *admin, Py_ssize_t n)
{
    if (!canonical(admin))
        return 0;
    if (admins->slots == NULL && set_init(admins, n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return set_add(admins, admin);
}

/* ---------------------------------------------------------------------------------------- */
/* What both judges read first of each worker */

/* The identity of the worker before: LIST-1 and LIST-2 compare each with it. */
typedef struct {
    PyObject *ns, *comp, *ep;
    unsigned long long iid;
} Identity;

/* Read worker w (of model, its fields at offset) into f: the names and request_plane_url are
   strings, the instance_id a u64 above the previous identity's (strictly increasing: LIST-1,
   LIST-2; *same_ns when the namespace is the previous one's), the transport of the transport
   model with *keys keys set. 1 when so, 0 when unsure (the Python rules judge), -1 on an error. */
static int read_worker(PyObject *w, PyTypeObject *model, const Py_ssize_t *offset, PyObject **f,
                       Identity *prev, int first, int *same_ns, int *keys)
{
    if (Py_TYPE(w) != model)
        return 0;
    for (int j = 0; j < N_FIELDS; j++)
        if ((f[j] = field(w, offset[j])) == NULL)
            return 0;
    PyObject *ns = f[NS], *comp = f[COMP], *ep = f[EP];
    if (!PyUnicode_CheckExact(ns) || !PyUnicode_CheckExact(comp) || !PyUnicode_CheckExact(ep) ||
        !PyUnicode_CheckExact(f[RPU]) || !PyLong_CheckExact(f[IID]))
        return 0;
    /* 0 <= instance_id <= 2**64 - 1; one out of u64 is the Python rules' to judge */
    unsigned long long iid = PyLong_AsUnsignedLongLong(f[IID]);
    if (iid == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *same_ns = 0;
    if (!first) {
        int c = compare(prev->ns, ns);
        *same_ns = c == 0;
        if (c == 0)
            c = compare(prev->comp, comp);
        if (c == 0)
            c = compare(prev->ep, ep);
        if (c == -2)
            return -1;
        if (c > 0 || (c == 0 && prev->iid >= iid))
            return 0;
    }
    prev->ns = ns, prev->comp = comp, prev->ep = ep, prev->iid = iid;
    PyObject *t = f[TRANSPORT];
    if (Py_TYPE(t) != transport_type)
        return 0;
    *keys = 0;
    for (int j = 0; j < N_TRANSPORT; j++) {
        PyObject *v = field(t, transport_offset[j]);
        if (v == NULL)
            return 0;
        *keys += v != Py_None;
    }
    return 1;
}

/* The arguments of f(workers: tuple, scope: str) passed by the fast call protocol (no format
   string to parse on every call), or -1 with a TypeError. */
static int workers_and_scope(PyObject *const *args, Py_ssize_t nargs, const char *name,
                             PyObject **workers, PyObject **scope)
{
    if (nargs != 2 || !PyTuple_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s() takes (workers: tuple, scope: str)", name);
        return -1;
    }
    *workers = args[0], *scope = args[1];
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* columns_hold(workers, scope): validate._columns_hold, or None when unsure */

#define UNSURE goto unsure

static PyObject *columns_hold(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *workers, *scope;
    if (workers_and_scope(args, nargs, "columns_hold", &workers, &scope) < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(workers);
    if (n == 0)
        return PyLong_FromLong(4); /* the top level's 3 names and the namespace */
    /* workers of validate.Worker, the first model configured */
    PyTypeObject *model = worker_types[0];
    const Py_ssize_t *offset = worker_offsets[0];
    if (model == NULL || Py_TYPE(PyTuple_GET_ITEM(workers, 0)) != model)
        Py_RETURN_NONE;
    long long strings = 4 + 13 * (long long)n;
    StringSet admins = {NULL, 0};
    Identity prev = {NULL, NULL, NULL, 0};
    PyObject *others = NULL; /* the indices of admin URLs not in LIST-6's form */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *f[N_FIELDS];
        int same_ns, keys;
        int read = read_worker(PyTuple_GET_ITEM(workers, k), model, offset, f, &prev, k == 0,
                               &same_ns, &keys);
        if (read < 0)
            goto error;
        if (!read || !keys) /* WORKER-3: a transport key */
            UNSURE;
        PyObject *ns = f[NS], *comp = f[COMP], *ep = f[EP];
        /* LIST-3 and LIST-5 */
        if (plane_matches(f[RPU], ns, comp, ep) != 1)
            UNSURE;
        if (!same_ns) { /* the previous worker's namespace is in scope */
            int in_scope = starts_with(ns, scope);
            if (in_scope == -1)
                goto error;
            if (!in_scope)
                UNSURE;
        }
        /* LIST-4: routes strictly increasing */
        PyObject *routes = f[ROUTES];
        if (!PyTuple_CheckExact(routes))
            UNSURE;
        Py_ssize_t r = PyTuple_GET_SIZE(routes);
        strings += r;
        for (Py_ssize_t j = 0; j < r; j++)
            if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(routes, j)))
                UNSURE;
        for (Py_ssize_t j = 1; j < r; j++) {
            int c = compare(PyTuple_GET_ITEM(routes, j - 1), PyTuple_GET_ITEM(routes, j));
            if (c == -2)
                goto error;
            if (c >= 0)
                UNSURE;
        }
        PyObject *system = f[SYSTEM], *admin = f[ADMIN], *size = f[SIZE], *error = f[ERROR];
        /* WORKER-11: an error worker has no routes, URLs or world_size */
        if (error != Py_None) {
            if (r || system != Py_None || admin != Py_None || size != Py_None)
                UNSURE;
            strings += 2;
        }
        if (size != Py_None)
            strings += 1;
        if (f[MODEL] != Py_None)
            strings += 2;
        if (system != Py_None) {
            if (!PyUnicode_CheckExact(system) || !is_system_url(system))
                UNSURE;
            strings += 2;
        }
        if (admin != Py_None) {
            /* WORKER-10 (with world_size), WORKER-8 in LIST-6's form, LIST-6 */
            if (size == Py_None || !PyUnicode_CheckExact(admin))
                UNSURE;
            if (!canonical(admin)) { /* WORKER-8 and LIST-6 for it: validate._settled judges */
                PyObject *index = PyLong_FromSsize_t(k);
                if (index == NULL || (others == NULL && (others = PyList_New(0)) == NULL) ||
                    PyList_Append(others, index) < 0) {
                    Py_XDECREF(index);
                    goto error;
                }
                Py_DECREF(index);
            } else {
                int unique = canonical_and_new(&admins, admin, n);
                if (unique < 0)
                    goto error;
                if (!unique)
                    UNSURE;
            }
            strings += 2;
        }
    }
    PyMem_Free(admins.slots);
    PyObject *count = PyLong_FromLongLong(strings);
    if (count == NULL || others == NULL) {
        Py_XDECREF(others);
        return count;
    }
    PyObject *pair = PyTuple_Pack(2, count, others);
    Py_DECREF(count);
    Py_DECREF(others);
    return pair;
unsure:
    PyMem_Free(admins.slots);
    Py_XDECREF(others);
    Py_RETURN_NONE;
error:
    PyMem_Free(admins.slots);
    Py_XDECREF(others);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* typed_flags(workers, scope): validate._typed_flags over typed workers, or None when unsure */

/* The members _typed_flags flags, by its names ("" is WORKER-10 and WORKER-11, "scope" LIST-5). */
enum { F_NS, F_COMP, F_EP, F_RPU, F_ROUTES, F_SYSTEM, F_MODEL, F_SIZE, F_ERROR, F_KIND, F_SCOPE,
       F_ADMIN, N_FLAGS };
static const char *const flag_names[N_FLAGS] = {
    "namespace", "component", "endpoint", "request_plane_url", "routes", "system_url",
    "model", "world_size", "error", "", "scope", "admin_base_url",
};
/* flag_names as interned strings (made by PyInit__speedups): the keys of the dict typed_flags
   answers, found by identity when validate.py looks them up by its own (interned) names. */
static PyObject *flag_keys[N_FLAGS];

/* A str or None member: 1 for a str, 0 for None, -1 for anything else (then unsure). */
static inline int optional_str(PyObject *v)
{
    return v == Py_None ? 0 : PyUnicode_CheckExact(v) ? 1 : -1;
}

static PyObject *typed_flags(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *workers, *scope;
    if (workers_and_scope(args, nargs, "typed_flags", &workers, &scope) < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(workers);
    /* workers of validate._TypedWorker, the second model configured */
    PyTypeObject *model = worker_types[1];
    const Py_ssize_t *offset = worker_offsets[1];
    if (n == 0 || model == NULL || Py_TYPE(PyTuple_GET_ITEM(workers, 0)) != model)
        Py_RETURN_NONE;
    PyObject *lists[N_FLAGS] = {NULL}, *result = NULL;
    long long strings = 4 + 13 * (long long)n;
    StringSet admins = {NULL, 0};
    Identity prev = {NULL, NULL, NULL, 0};
    int prev_in_scope = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *f[N_FIELDS];
        int same_ns, keys;
        int read = read_worker(PyTuple_GET_ITEM(workers, k), model, offset, f, &prev, k == 0,
                               &same_ns, &keys);
        if (read < 0)
            goto error;
        /* WORKER-3: exactly one transport key (the text's quotes then prove no other) */
        if (!read || keys != 1)
            UNSURE;
        PyObject *ns = f[NS], *comp = f[COMP], *ep = f[EP];
        unsigned flags = 0;
        /* minLength 1 */
        if (PyUnicode_GET_LENGTH(ns) == 0)
            flags |= 1u << F_NS;
        if (PyUnicode_GET_LENGTH(comp) == 0)
            flags |= 1u << F_COMP;
        if (PyUnicode_GET_LENGTH(ep) == 0)
            flags |= 1u << F_EP;
        /* LIST-3 */
        int plane = plane_matches(f[RPU], ns, comp, ep);
        if (plane < 0)
            UNSURE;
        if (!plane)
            flags |= 1u << F_RPU;
        /* LIST-5 */
        if (!same_ns) {
            prev_in_scope = starts_with(ns, scope);
            if (prev_in_scope == -1)
                goto error;
        }
        if (!prev_in_scope)
            flags |= 1u << F_SCOPE;
        /* routes: items of minLength 1, strictly increasing (LIST-4; unique items with it) */
        PyObject *routes = f[ROUTES];
        if (!PyTuple_CheckExact(routes))
            UNSURE;
        Py_ssize_t r = PyTuple_GET_SIZE(routes);
        strings += r;
        for (Py_ssize_t j = 0; j < r; j++) {
            PyObject *item = PyTuple_GET_ITEM(routes, j);
            if (!PyUnicode_CheckExact(item))
                UNSURE;
            if (PyUnicode_GET_LENGTH(item) == 0)
                flags |= 1u << F_ROUTES;
        }
        for (Py_ssize_t j = 1; j < r && !(flags & (1u << F_ROUTES)); j++) {
            int c = compare(PyTuple_GET_ITEM(routes, j - 1), PyTuple_GET_ITEM(routes, j));
            if (c == -2)
                goto error;
            if (c >= 0)
                flags |= 1u << F_ROUTES;
        }
        PyObject *system = f[SYSTEM], *admin = f[ADMIN], *size = f[SIZE], *error = f[ERROR];
        int has_model = optional_str(f[MODEL]), has_error = optional_str(error),
            has_system = optional_str(system), has_admin = optional_str(admin);
        if (has_model < 0 || has_error < 0 || has_system < 0 || has_admin < 0)
            UNSURE;
        if (has_model) {
            strings += 2;
            if (PyUnicode_GET_LENGTH(f[MODEL]) == 0)
                flags |= 1u << F_MODEL;
        }
        if (has_error) {
            strings += 2;
            if (PyUnicode_GET_LENGTH(error) == 0)
                flags |= 1u << F_ERROR;
        }
        /* world_size: 1 to 2**32 - 1; one beyond a long long is the Python rules' to judge */
        if (size != Py_None) {
            if (!PyLong_CheckExact(size))
                UNSURE;
            int overflow = 0;
            long long value = PyLong_AsLongLongAndOverflow(size, &overflow);
            if (overflow || (value == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                UNSURE;
            }
            if (value < 1 || value > 4294967295LL)
                flags |= 1u << F_SIZE;
            strings += 1;
        }
        if (has_system) {
            if (!is_system_url(system))
                flags |= 1u << F_SYSTEM;
            strings += 2;
        }
        if (has_admin) {
            /* A URL in LIST-6's form holds WORKER-8 and is its own key (none may come twice);
               any other is flagged: validate.py judges its pattern, host and key. */
            if (!canonical(admin))
                flags |= 1u << F_ADMIN;
            else {
                int unique = canonical_and_new(&admins, admin, n);
                if (unique < 0)
                    goto error;
                if (!unique)
                    UNSURE;
            }
            strings += 2;
        }
        /* WORKER-11, WORKER-10 (validate._kind_breaks) */
        if (has_error ? (r || has_system || has_admin || size != Py_None)
                      : (has_admin && size == Py_None))
            flags |= 1u << F_KIND;
        for (int bit = 0; flags; bit++, flags >>= 1) {
            if (!(flags & 1))
                continue;
            if (lists[bit] == NULL && (lists[bit] = PyList_New(0)) == NULL)
                goto error;
            PyObject *index = PyLong_FromSsize_t(k);
            if (index == NULL || PyList_Append(lists[bit], index) < 0) {
                Py_XDECREF(index);
                goto error;
            }
            Py_DECREF(index);
        }
    }
    PyObject *flagged = PyDict_New();
    if (flagged == NULL)
        goto error;
    for (int bit = 0; bit < N_FLAGS; bit++)
        if (lists[bit] != NULL && PyDict_SetItem(flagged, flag_keys[bit], lists[bit]) < 0) {
            Py_DECREF(flagged);
            goto error;
        }
    PyObject *count = PyLong_FromLongLong(strings);
    result = count == NULL ? NULL : PyTuple_Pack(2, count, flagged);
    Py_XDECREF(count);
    Py_DECREF(flagged);
    goto done;
unsure:
    Py_INCREF(Py_None);
    result = Py_None;
    goto done;
error:
    result = NULL;
done:
    PyMem_Free(admins.slots);
    for (int bit = 0; bit < N_FLAGS; bit++)
        Py_XDECREF(lists[bit]);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* quotes(raw): raw.count(b'"'), eight bytes at a time */

static Py_ssize_t count_quotes(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0, count = 0;
#if defined(__SSE2__)
    /* 16 bytes a step: each match adds one (0 - -1) to its byte lane; the lanes are summed
       before any can reach 256 */
    const __m128i quote = _mm_set1_epi8('"'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i lanes = zero;
        for (int step = 0; step < 255 && i + 16 <= n; step++, i += 16) {
            __m128i bytes = _mm_loadu_si128((const __m128i *)(p + i));
            lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(bytes, quote));
        }
        __m128i sums = _mm_sad_epu8(lanes, zero);
        count += _mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4);
    }
#else
    /* 8 bytes a step: a zero byte where a quote was, found without carries between bytes */
    const uint64_t quote = 0x2222222222222222ULL, low = 0x7f7f7f7f7f7f7f7fULL,
                   high = 0x8080808080808080ULL, ones = 0x0101010101010101ULL;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        uint64_t x = word ^ quote;
        uint64_t zeros = ~(((x & low) + low) | x) & high;
        count += (Py_ssize_t)(((zeros >> 7) * ones) >> 56);
    }
#endif
    for (; i < n; i++)
        count += p[i] == '"';
    return count;
}

static PyObject *quotes(PyObject *self, PyObject *raw)
{
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "quotes() takes bytes");
        return NULL;
    }
    return PyLong_FromSsize_t(
        count_quotes((const unsigned char *)PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw)));
}

/* ---------------------------------------------------------------------------------------- */
/* scan(raw): the located path's look at the text, in one call */

/* Where needle (m bytes) first occurs in s[0..n), or NULL. memmem (glibc's and the BSDs')
   searches in linear time with few calls, where a memchr per candidate first byte would stop at
   every 's' of a listing; but it builds its shift table on every call, which is most of its
   price in a short text. Below SHORT_TEXT bytes (a few workers), memchr looks for needle[rare],
   a byte the needle has and a listing seldom does, and each stop compares the whole needle (at
   most SHORT_TEXT * m steps). */
#define SHORT_TEXT 2048
static const unsigned char *find(const unsigned char *s, Py_ssize_t n, const char *needle,
                                 Py_ssize_t m, Py_ssize_t rare)
{
    if (n >= SHORT_TEXT)
        return memmem(s, (size_t)n, needle, (size_t)m);
    const unsigned char *p = s + rare, *last = s + n - (m - rare); /* needle[rare]'s last place */
    while (p <= last) {
        p = memchr(p, needle[rare], (size_t)(last - p + 1));
        if (p == NULL)
            return NULL;
        if (memcmp(p - rare, needle, (size_t)m) == 0)
            return p - rare;
        p++;
    }
    return NULL;
}

/* validate._NULL_VALUE.search(raw) is not None: null after ':', '[' or ',' and JSON blanks. */
static int null_value(const unsigned char *s, Py_ssize_t n)
{
    const unsigned char *p = s, *end = s + n;
    while (end - p >= 4) {
        p = find(p, end - p, "null", 4, 1); /* 'u': urls and routes have it, few else */
        if (p == NULL)
            return 0;
        const unsigned char *q = p;
        while (q > s && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r' || q[-1] == '\n'))
            q--;
        if (q > s && (q[-1] == ':' || q[-1] == '[' || q[-1] == ','))
            return 1;
        p++;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *raw)
{
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    /* 'y' and 'k': the rarest bytes of each marker in a listing (dynamo has a 'y') */
    int marked = find(p, n, "system_routes", 13, 1) != NULL ||
                 find(p, n, "weight_transfer_backend", 23, 19) != NULL || null_value(p, n);
    PyObject *count = PyLong_FromSsize_t(count_quotes(p, n));
    PyObject *result = count == NULL ? NULL : PyTuple_Pack(2, count, marked ? Py_True : Py_False);
    Py_XDECREF(count);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* violation(...) and label(worker): what the located path builds for each defect it names */

/* validate's Violation (a frozen dataclass with slots) and where it keeps its seven fields. */
#define N_VIOLATION 7
static PyTypeObject *violation_type = NULL;
static Py_ssize_t violation_offset[N_VIOLATION];
static PyObject *violation_level = NULL; /* what every violation the validator builds says */

static PyObject *configure_violations(PyObject *self, PyObject *args)
{
    PyObject *type, *fields, *level;
    if (!PyArg_ParseTuple(args, "O!OU", &PyType_Type, &type, &fields, &level))
        return NULL;
    Py_ssize_t offsets[N_VIOLATION];
    if (read_offsets((PyTypeObject *)type, fields, offsets, N_VIOLATION) < 0)
        return NULL;
    memcpy(violation_offset, offsets, sizeof offsets);
    Py_INCREF(type);
    Py_XSETREF(violation_type, (PyTypeObject *)type);
    Py_INCREF(level);
    Py_XSETREF(violation_level, level);
    Py_RETURN_NONE;
}

/* violation(requirement, pointer, message, worker, expected, found): the Violation with those
   fields and the configured level, its slots set as violation.violation_of sets them (no
   __init__: the message is already composed). */
static PyObject *violation(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (violation_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "violation(): call configure_violations() first");
        return NULL;
    }
    if (nargs != N_VIOLATION - 1) {
        PyErr_Format(PyExc_TypeError, "violation() takes %d arguments", N_VIOLATION - 1);
        return NULL;
    }
    PyObject *v = violation_type->tp_alloc(violation_type, 0);
    if (v == NULL)
        return NULL;
    /* requirement, pointer, message, worker, level, expected, found */
    PyObject *values[N_VIOLATION] = {args[0], args[1], args[2], args[3], violation_level,
                                     args[4], args[5]};
    for (int i = 0; i < N_VIOLATION; i++) {
        Py_INCREF(values[i]);
        *(PyObject **)((char *)v + violation_offset[i]) = values[i];
    }
    return v;
}

/* The decimal digits of v written at out (at least 20 bytes), their count. */
static int u64_digits(char *out, unsigned long long v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (int k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    return n;
}

/* str(i) of an int: written here when within a long long or a u64 (an instance_id), else by
   int's own conversion. */
static PyObject *decimal(PyObject *i)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    unsigned long long magnitude = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    if (overflow > 0) {
        magnitude = PyLong_AsUnsignedLongLong(i);
        if (magnitude == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return PyObject_Str(i);
        }
    } else if (overflow < 0)
        return PyObject_Str(i);
    char digits[21];
    int negative = !overflow && v < 0;
    digits[0] = '-';
    int d = negative + u64_digits(digits + negative, magnitude);
    PyObject *text = PyUnicode_New(d, 127);
    if (text != NULL)
        memcpy(PyUnicode_DATA(text), digits, (size_t)d);
    return text;
}

/* parts[0] + seps[0] + parts[1] + ... + parts[n - 1], each sep one ASCII character ('?': none):
   one allocation, where PyUnicode_FromFormat would parse its format on every call. */
static PyObject *joined(PyObject *const *parts, int n, const char *seps)
{
    Py_ssize_t length = 0;
    Py_UCS4 widest = 127;
    for (int k = 0; k < n; k++) {
        length += PyUnicode_GET_LENGTH(parts[k]) + (k + 1 < n && seps[k] != '?');
        Py_UCS4 most = PyUnicode_MAX_CHAR_VALUE(parts[k]);
        widest = most > widest ? most : widest;
    }
    PyObject *text = PyUnicode_New(length, widest);
    if (text == NULL)
        return NULL;
    if (widest == 127) { /* ASCII alone (the usual case): bytes copied as they are */
        char *out = (char *)PyUnicode_DATA(text);
        for (int k = 0; k < n; k++) {
            Py_ssize_t size = PyUnicode_GET_LENGTH(parts[k]);
            memcpy(out, PyUnicode_DATA(parts[k]), (size_t)size);
            out += size;
            if (k + 1 < n && seps[k] != '?')
                *out++ = seps[k];
        }
        return text;
    }
    Py_ssize_t at = 0;
    for (int k = 0; k < n; k++) {
        Py_ssize_t size = PyUnicode_GET_LENGTH(parts[k]);
        if (PyUnicode_CopyCharacters(text, at, parts[k], 0, size) < 0) {
            Py_DECREF(text);
            return NULL;
        }
        at += size;
        if (k + 1 < n && seps[k] != '?')
            PyUnicode_WRITE(PyUnicode_KIND(text), PyUnicode_DATA(text), at++, (Py_UCS4)seps[k]);
    }
    return text;
}

/* label(worker): "namespace.component.endpoint#instance_id" of a worker of a configured model
   (validate._label's text: WorkerId's spelling). */
static PyObject *label(PyObject *self, PyObject *w)
{
    for (int m = 0; m < N_MODELS; m++) {
        if (worker_types[m] == NULL || Py_TYPE(w) != worker_types[m])
            continue;
        PyObject *ns = field(w, worker_offsets[m][NS]), *comp = field(w, worker_offsets[m][COMP]);
        PyObject *ep = field(w, worker_offsets[m][EP]), *iid = field(w, worker_offsets[m][IID]);
        if (ns == NULL || comp == NULL || ep == NULL || iid == NULL ||
            !PyUnicode_CheckExact(ns) || !PyUnicode_CheckExact(comp) ||
            !PyUnicode_CheckExact(ep) || !PyLong_CheckExact(iid))
            break;
        PyObject *digits = decimal(iid);
        if (digits == NULL)
            return NULL;
        PyObject *parts[4] = {ns, comp, ep, digits};
        PyObject *text = joined(parts, 4, "..#");
        Py_DECREF(digits);
        return text;
    }
    PyErr_SetString(PyExc_TypeError, "label() takes a decoded worker with its identity's types");
    return NULL;
}

/* property_violations(workers, flagged, judges, labels): validate._property_violations */

static PyObject *workers_prefix = NULL; /* "/workers/", made by PyInit__speedups */

/* The configured model of worker w (its index), or -1. */
static int model_of(PyObject *w)
{
    for (int m = 0; m < N_MODELS; m++)
        if (worker_types[m] != NULL && Py_TYPE(w) == worker_types[m])
            return m;
    return -1;
}

/* Worker i's label, kept in labels (a dict by index) as validate._label keeps it. */
static PyObject *label_at(PyObject *labels, PyObject *key, PyObject *w)
{
    PyObject *found = PyDict_GetItemWithError(labels, key);
    if (found != NULL)
        return Py_NewRef(found);
    if (PyErr_Occurred())
        return NULL;
    PyObject *made = label(NULL, w);
    if (made != NULL && PyDict_SetItem(labels, key, made) < 0)
        Py_CLEAR(made);
    return made;
}

static PyObject *expected_prefix = NULL, *found_prefix = NULL; /* "expected ", ", found " */

/* The judgement of an int by (low, high, requirement, expected), a property whose checks are
   minimum and maximum alone (either None when absent): [] when low <= value <= high, else the
   one (requirement, -1, "", expected, str(value), message) validate._judged gives. */
static PyObject *judged_int(PyObject *bounds, PyObject *value)
{
    PyObject *low = PyTuple_GET_ITEM(bounds, 0), *high = PyTuple_GET_ITEM(bounds, 1);
    int below = low == Py_None ? 0 : PyObject_RichCompareBool(value, low, Py_LT);
    int above = below || high == Py_None ? 0 : PyObject_RichCompareBool(value, high, Py_GT);
    if (below < 0 || above < 0)
        return NULL;
    if (!below && !above)
        return PyList_New(0);
    PyObject *requirement = PyTuple_GET_ITEM(bounds, 2), *expected = PyTuple_GET_ITEM(bounds, 3);
    PyObject *text = decimal(value), *message = NULL, *item = NULL, *found = NULL;
    PyObject *minus_one = PyLong_FromLong(-1), *empty = PyUnicode_FromStringAndSize("", 0);
    if (text == NULL || minus_one == NULL || empty == NULL)
        goto done;
    PyObject *parts[4] = {expected_prefix, expected, found_prefix, text};
    if ((message = joined(parts, 4, "???")) == NULL)
        goto done;
    if ((item = PyTuple_Pack(6, requirement, minus_one, empty, expected, text, message)) == NULL)
        goto done;
    if ((found = PyList_New(1)) != NULL)
        PyList_SET_ITEM(found, 0, Py_NewRef(item));
done:
    Py_XDECREF(text);
    Py_XDECREF(message);
    Py_XDECREF(item);
    Py_XDECREF(minus_one);
    Py_XDECREF(empty);
    return found;
}

/* The violations of one flagged member: judge's (requirement, j, tail, expected, found,
   message) tuples of its value, each appended to out as ((i, name, j), Violation). */
static int member_violations(PyObject *found, PyObject *key, PyObject *name,
                             PyObject *w, PyObject *labels, PyObject *out, PyObject *bad)
{
    int rc = -1;
    PyObject *pair = NULL, *digits = NULL, *worker = NULL;
    if ((pair = PyTuple_Pack(2, key, name)) == NULL || PySet_Add(bad, pair) < 0)
        goto done;
    if ((digits = decimal(key)) == NULL)
        goto done;
    if ((worker = label_at(labels, key, w)) == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(found); k++) {
        PyObject *item = PyList_GET_ITEM(found, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 6) {
            PyErr_SetString(PyExc_TypeError, "a judge answers (requirement, j, tail, expected, "
                                             "found, message) tuples");
            goto done;
        }
        PyObject *tail = PyTuple_GET_ITEM(item, 2);
        if (!PyUnicode_Check(tail)) {
            PyErr_SetString(PyExc_TypeError, "a judge's pointer tail is not a str");
            goto done;
        }
        /* /workers/<i>/<name><tail> */
        PyObject *parts[4] = {workers_prefix, digits, name, tail};
        PyObject *pointer = joined(parts, 4, "?/?");
        if (pointer == NULL)
            goto done;
        PyObject *args[6] = {PyTuple_GET_ITEM(item, 0), pointer, PyTuple_GET_ITEM(item, 5),
                             worker, PyTuple_GET_ITEM(item, 3), PyTuple_GET_ITEM(item, 4)};
        PyObject *v = violation(NULL, args, 6);
        Py_DECREF(pointer);
        if (v == NULL)
            goto done;
        PyObject *where = PyTuple_Pack(3, key, name, PyTuple_GET_ITEM(item, 1));
        PyObject *entry = where == NULL ? NULL : PyTuple_Pack(2, where, v);
        Py_XDECREF(where);
        Py_DECREF(v);
        if (entry == NULL)
            goto done;
        int added = PyList_Append(out, entry);
        Py_DECREF(entry);
        if (added < 0)
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(pair);
    Py_XDECREF(digits);
    Py_XDECREF(worker);
    return rc;
}

static PyObject *property_violations(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyTuple_Check(args[0]) || !PyDict_Check(args[1]) ||
        !PyTuple_Check(args[2]) || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "property_violations() takes (workers: tuple, flagged: "
                                         "dict, judges: tuple, labels: dict)");
        return NULL;
    }
    PyObject *workers = args[0], *flagged = args[1], *judges = args[2], *labels = args[3];
    PyObject *out = PyList_New(0), *bad = PySet_New(NULL), *memo = NULL, *key = NULL;
    if (out == NULL || bad == NULL)
        goto error;
    Py_ssize_t n = PyTuple_GET_SIZE(workers), n_judges = PyTuple_GET_SIZE(judges);
    if (n_judges > 64) {
        PyErr_SetString(PyExc_ValueError, "property_violations() takes at most 64 judges");
        goto error;
    }
    /* Which judges' names are flagged: each flagged name (a few) found among the judges' by
       identity (typed_flags' names are interned, as validate.py's), else by equality. */
    uint64_t named = 0;
    Py_ssize_t at = 0;
    PyObject *flag, *ignored;
    while (PyDict_Next(flagged, &at, &flag, &ignored)) {
        for (int by_equality = 0; by_equality < 2; by_equality++) {
            Py_ssize_t p = 0;
            for (; p < n_judges; p++) {
                PyObject *judge = PyTuple_GET_ITEM(judges, p), *name;
                if (!PyTuple_Check(judge) || PyTuple_GET_SIZE(judge) != 4)
                    continue; /* refused below */
                name = PyTuple_GET_ITEM(judge, 0);
                int same = name == flag;
                if (by_equality && PyUnicode_Check(name) && PyUnicode_Check(flag)) {
                    if ((same = PyUnicode_Compare(name, flag)) == -1 && PyErr_Occurred())
                        goto error;
                    same = same == 0;
                }
                if (same)
                    break;
            }
            if (p < n_judges) {
                named |= (uint64_t)1 << p;
                break;
            }
        }
    }
    for (Py_ssize_t p = 0; p < n_judges; p++) {
        PyObject *judge = PyTuple_GET_ITEM(judges, p);
        if (!PyTuple_Check(judge) || PyTuple_GET_SIZE(judge) != 4 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(judge, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(judge, 1)) ||
            (PyTuple_GET_ITEM(judge, 3) != Py_None &&
             (!PyTuple_Check(PyTuple_GET_ITEM(judge, 3)) ||
              PyTuple_GET_SIZE(PyTuple_GET_ITEM(judge, 3)) != 4 ||
              !PyUnicode_Check(PyTuple_GET_ITEM(PyTuple_GET_ITEM(judge, 3), 3))))) {
            PyErr_SetString(PyExc_TypeError,
                            "judges are (name, column, judge, bounds or None) tuples");
            goto error;
        }
        PyObject *name = PyTuple_GET_ITEM(judge, 0), *judged = PyTuple_GET_ITEM(judge, 2);
        PyObject *bounds = PyTuple_GET_ITEM(judge, 3);
        Py_ssize_t column = PyLong_AsSsize_t(PyTuple_GET_ITEM(judge, 1));
        if (column < 0 || column >= N_FIELDS) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a judge's column is not a worker field's");
            goto error;
        }
        if (!(named & ((uint64_t)1 << p)))
            continue;
        PyObject *indices = PyDict_GetItemWithError(flagged, name);
        if (indices == NULL) {
            if (PyErr_Occurred())
                goto error;
            continue;
        }
        if (!PyList_Check(indices)) {
            PyErr_SetString(PyExc_TypeError, "flagged maps a member name to a list of indices");
            goto error;
        }
        Py_ssize_t count = PyList_GET_SIZE(indices);
        for (Py_ssize_t k = 0; k < count; k++) {
            key = Py_NewRef(PyList_GET_ITEM(indices, k));
            Py_ssize_t i = PyLong_AsSsize_t(key);
            if (i == -1 && PyErr_Occurred())
                goto error;
            if (i < 0 || i >= n) {
                PyErr_SetString(PyExc_IndexError, "a flagged index is not a worker's");
                goto error;
            }
            PyObject *w = PyTuple_GET_ITEM(workers, i);
            int m = model_of(w);
            if (m < 0) {
                PyErr_SetString(PyExc_TypeError, "a worker is not of a configured model");
                goto error;
            }
            PyObject *value = field(w, worker_offsets[m][column]);
            if (value == NULL || value == Py_None) {
                Py_CLEAR(key);
                continue;
            }
            /* each distinct value is judged once (a broken fleet repeats its defect) */
            PyObject *found = NULL;
            if (memo != NULL && (found = PyDict_GetItemWithError(memo, value)) != NULL)
                Py_INCREF(found);
            else if (PyErr_Occurred())
                goto error;
            else {
                found = bounds != Py_None && PyLong_CheckExact(value)
                            ? judged_int(bounds, value)
                            : PyObject_CallOneArg(judged, value);
                if (found == NULL)
                    goto error;
                if (!PyList_Check(found)) {
                    Py_DECREF(found);
                    PyErr_SetString(PyExc_TypeError, "a judge answers a list");
                    goto error;
                }
                if (count > 1 && ((memo == NULL && (memo = PyDict_New()) == NULL) ||
                                  PyDict_SetItem(memo, value, found) < 0)) {
                    Py_DECREF(found);
                    goto error;
                }
            }
            int rc = PyList_GET_SIZE(found)
                         ? member_violations(found, key, name, w, labels, out, bad)
                         : 0;
            Py_DECREF(found);
            Py_CLEAR(key);
            if (rc < 0)
                goto error;
        }
        Py_CLEAR(memo);
    }
    PyObject *result = PyTuple_Pack(2, out, bad);
    Py_DECREF(out);
    Py_DECREF(bad);
    return result;
error:
    Py_XDECREF(key);
    Py_XDECREF(memo);
    Py_XDECREF(out);
    Py_XDECREF(bad);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Transport, transport_fields, ((model, fields), ...)): where the models keep their "
     "fields, read off their member descriptors (tcp, nats_tcp, http; a worker model's in "
     "validate._WORKER_COLUMNS' order)."},
    {"columns_hold", (PyCFunction)(void (*)(void))columns_hold, METH_FASTCALL,
     "columns_hold(workers, scope) -> int | (int, list[int]) | None: validate._columns_hold's count "
     "when every column rule certainly holds (with the indices of the admin URLs not in LIST-6's "
     "form, whose WORKER-8 and LIST-6 validate._settled judges, when there are any), else None (validate.py then asks its Python rules); None for workers "
     "of another model than the first configured."},
    {"typed_flags", (PyCFunction)(void (*)(void))typed_flags, METH_FASTCALL,
     "typed_flags(workers, scope) -> (int, dict[str, list[int]]) | None: for workers of the model "
     "with JSON types alone (the second configured), validate._typed_flags' flags and the count "
     "of JSON strings when the order, transports and admin URLs in LIST-6's form certainly hold, "
     "else None; admin URLs in another form are flagged as admin_base_url."},
    {"scan", scan, METH_O,
     "scan(raw) -> (int, bool): raw.count(b'\"'), and whether raw holds a variant's marker "
     "(system_routes, weight_transfer_backend) or a null value (validate._NULL_VALUE)."},
    {"quotes", quotes, METH_O, "quotes(raw) -> int: raw.count(b'\"')."},
    {"configure_violations", configure_violations, METH_VARARGS,
     "configure_violations(Violation, fields, level): where the Violation dataclass keeps its "
     "fields (requirement, pointer, message, worker, level, expected, found), and the level "
     "violation() gives."},
    {"violation", (PyCFunction)(void (*)(void))violation, METH_FASTCALL,
     "violation(requirement, pointer, message, worker, expected, found) -> Violation: "
     "violation.violation_of's object."},
    {"label", label, METH_O,
     "label(worker) -> str: a decoded worker's 'namespace.component.endpoint#instance_id'."},
    {"property_violations", (PyCFunction)(void (*)(void))property_violations, METH_FASTCALL,
     "property_violations(workers, flagged, judges, labels) -> (list, set): "
     "validate._property_violations: the violations of the flagged members by each "
     "(name, column, judge, bounds) of judges in turn (an int judged here when bounds are "
     "given), keyed ((i, name, j), Violation), and the "
     "(i, name) pairs refused; the labels made are kept in labels."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "prime_rl_dynamo._speedups",
    "The fast path's column rules in C (an optional accelerator of prime_rl_dynamo.validate).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    fill_classes();
    if (workers_prefix == NULL && (workers_prefix = PyUnicode_InternFromString("/workers/")) == NULL)
        return NULL;
    for (int bit = 0; bit < N_FLAGS; bit++)
        if (flag_keys[bit] == NULL && (flag_keys[bit] = PyUnicode_InternFromString(flag_names[bit])) == NULL)
            return NULL;
    if (found_prefix == NULL &&
        ((expected_prefix = PyUnicode_InternFromString("expected ")) == NULL ||
         (found_prefix = PyUnicode_InternFromString(", found ")) == NULL))
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "ABI", SPEEDUPS_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
