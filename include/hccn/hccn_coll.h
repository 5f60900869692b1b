/*
 * Collective operations. Every rank of the communicator calls the same
 * collective, in the same order, from its own thread, with buffers in its
 * own arena. Semantics follow NCCL (see docs/api.md for the HCCL/NCCL map);
 * counts are in elements of dtype.
 *
 * In place: allreduce, broadcast and reduce when sendbuf == recvbuf;
 * reduce_scatter when recvbuf == sendbuf + rank * recvcount elements;
 * allgather when sendbuf == recvbuf + rank * sendcount elements;
 * allgatherv when sendbuf == recvbuf + displs[rank] elements;
 * reduce_scatterv when recvbuf == sendbuf + (recvcounts[0] + ... +
 * recvcounts[rank-1]) elements. Alltoall and alltoallv have none.
 * Broadcast reads sendbuf only on the root; reduce writes recvbuf only on
 * the root.
 *
 * The blocking forms return when the data has moved and advance the rank's
 * clock to the operation's simulated end. The i-forms return at once with a
 * future (see hccn.h); operations on one communicator complete in call order.
 */
#ifndef HCCN_HCCN_COLL_H
#define HCCN_HCCN_COLL_H

#ifdef __cplusplus
extern "C" {
#endif

HCCN_API hccn_status_t hccn_allreduce(hccn_comm_t *comm, const void *sendbuf,
                                      void *recvbuf, size_t count, hccn_dtype_t dtype,
                                      hccn_redop_t op);
HCCN_API hccn_status_t hccn_reduce_scatter(hccn_comm_t *comm, const void *sendbuf,
                                           void *recvbuf, size_t recvcount,
                                           hccn_dtype_t dtype, hccn_redop_t op);
HCCN_API hccn_status_t hccn_allgather(hccn_comm_t *comm, const void *sendbuf,
                                      void *recvbuf, size_t sendcount,
                                      hccn_dtype_t dtype);
HCCN_API hccn_status_t hccn_broadcast(hccn_comm_t *comm, const void *sendbuf,
                                      void *recvbuf, size_t count, hccn_dtype_t dtype,
                                      int root);
HCCN_API hccn_status_t hccn_reduce(hccn_comm_t *comm, const void *sendbuf,
                                   void *recvbuf, size_t count, hccn_dtype_t dtype,
                                   hccn_redop_t op, int root);
HCCN_API hccn_status_t hccn_alltoall(hccn_comm_t *comm, const void *sendbuf,
                                     void *recvbuf, size_t count, hccn_dtype_t dtype);
/* Root scatters SEND[n*recvcount] (block r to rank r); every rank receives
 * recvcount elements. Root gathers every rank's SEND[sendcount] into
 * RECV[n*sendcount]. sendbuf (scatter) / recvbuf (gather) is read only on
 * the root. */
HCCN_API hccn_status_t hccn_scatter(hccn_comm_t *comm, const void *sendbuf,
                                    void *recvbuf, size_t recvcount, hccn_dtype_t dtype,
                                    int root);
HCCN_API hccn_status_t hccn_gather(hccn_comm_t *comm, const void *sendbuf,
                                   void *recvbuf, size_t sendcount, hccn_dtype_t dtype,
                                   int root);
HCCN_API hccn_status_t hccn_barrier(hccn_comm_t *comm);

/* The v-forms (MPI's, HCCL's HcclAlltoAllV / HcclAllGatherV /
 * HcclReduceScatterV). Arrays have one entry per rank of comm; counts and
 * displacements are in elements; blocks of one receive buffer must not
 * overlap. A rank's arrays need only live for the call (they are copied).
 *
 * alltoallv: SEND block j (sendcounts[j] at sdispls[j]) goes to rank j,
 *   RECV block i (recvcounts[i] at rdispls[i]) comes from rank i; rank i's
 *   sendcounts[j] must equal rank j's recvcounts[i].
 * allgatherv: every rank's SEND[sendcount] lands in RECV block r
 *   (recvcounts[r] at displs[r]) of every rank; recvcounts is the same on
 *   every rank and recvcounts[r] is rank r's sendcount. displs may differ
 *   between ranks.
 * reduce_scatterv: SEND holds recvcounts[0] + ... + recvcounts[n-1]
 *   elements, block r packed after the blocks before it; rank r receives
 *   block r reduced over all ranks in RECV[recvcounts[r]]. recvcounts is
 *   the same on every rank.
 * Disagreeing counts are HCCN_ERR_MISMATCH on every rank, and no user
 * buffer is written. */
HCCN_API hccn_status_t hccn_alltoallv(hccn_comm_t *comm, const void *sendbuf,
                                      const size_t *sendcounts, const size_t *sdispls,
                                      void *recvbuf, const size_t *recvcounts,
                                      const size_t *rdispls, hccn_dtype_t dtype);
HCCN_API hccn_status_t hccn_allgatherv(hccn_comm_t *comm, const void *sendbuf,
                                       size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       hccn_dtype_t dtype);
HCCN_API hccn_status_t hccn_reduce_scatterv(hccn_comm_t *comm, const void *sendbuf,
                                            void *recvbuf, const size_t *recvcounts,
                                            hccn_dtype_t dtype, hccn_redop_t op);

/* Options of one call; NULL fields mean "the communicator's setting". */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_coll_opts_t) */
    int compress;            /* HCCN_COMPRESS_*, or -1 for the comm's */
    const char *algo;        /* HCCN_ALGO grammar, or NULL */
} hccn_coll_opts_t;

/* allreduce / reduce_scatter / allgather with options; blocking when fut is
 * NULL. Compression needs dtype HCCN_FP32 and op SUM, AVG, MAX or MIN. */
HCCN_API hccn_status_t hccn_allreduce_opts(hccn_comm_t *comm, const void *sendbuf,
                                           void *recvbuf, size_t count,
                                           hccn_dtype_t dtype, hccn_redop_t op,
                                           const hccn_coll_opts_t *opts,
                                           hccn_future_t **fut);
HCCN_API hccn_status_t hccn_reduce_scatter_opts(hccn_comm_t *comm, const void *sendbuf,
                                                void *recvbuf, size_t recvcount,
                                                hccn_dtype_t dtype, hccn_redop_t op,
                                                const hccn_coll_opts_t *opts,
                                                hccn_future_t **fut);
HCCN_API hccn_status_t hccn_allgather_opts(hccn_comm_t *comm, const void *sendbuf,
                                           void *recvbuf, size_t sendcount,
                                           hccn_dtype_t dtype,
                                           const hccn_coll_opts_t *opts,
                                           hccn_future_t **fut);

/* Non-blocking forms: same arguments, plus the future they return. */
HCCN_API hccn_status_t hccn_iallreduce(hccn_comm_t *comm, const void *sendbuf,
                                       void *recvbuf, size_t count, hccn_dtype_t dtype,
                                       hccn_redop_t op, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ireduce_scatter(hccn_comm_t *comm, const void *sendbuf,
                                            void *recvbuf, size_t recvcount,
                                            hccn_dtype_t dtype, hccn_redop_t op,
                                            hccn_future_t **fut);
HCCN_API hccn_status_t hccn_iallgather(hccn_comm_t *comm, const void *sendbuf,
                                       void *recvbuf, size_t sendcount,
                                       hccn_dtype_t dtype, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ibroadcast(hccn_comm_t *comm, const void *sendbuf,
                                       void *recvbuf, size_t count, hccn_dtype_t dtype,
                                       int root, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ireduce(hccn_comm_t *comm, const void *sendbuf,
                                    void *recvbuf, size_t count, hccn_dtype_t dtype,
                                    hccn_redop_t op, int root, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ialltoall(hccn_comm_t *comm, const void *sendbuf,
                                      void *recvbuf, size_t count, hccn_dtype_t dtype,
                                      hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ibarrier(hccn_comm_t *comm, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ialltoallv(hccn_comm_t *comm, const void *sendbuf,
                                       const size_t *sendcounts, const size_t *sdispls,
                                       void *recvbuf, const size_t *recvcounts,
                                       const size_t *rdispls, hccn_dtype_t dtype,
                                       hccn_future_t **fut);
HCCN_API hccn_status_t hccn_iallgatherv(hccn_comm_t *comm, const void *sendbuf,
                                        size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        hccn_dtype_t dtype, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_ireduce_scatterv(hccn_comm_t *comm, const void *sendbuf,
                                             void *recvbuf, const size_t *recvcounts,
                                             hccn_dtype_t dtype, hccn_redop_t op,
                                             hccn_future_t **fut);

#ifdef __cplusplus
}
#endif

#endif /* HCCN_HCCN_COLL_H */
