# fio of another Debian release (debootstrap chroot): usage fio_chroot.sh CHROOT VERSION
R=$1; V=$2
mkdir -p $R/tmp/fio && cp /work/wt/parsers/tests/data/fio/global-and-job.fio $R/tmp/fio/
sed -i 's#directory=/tmp/pcorp/work#directory=/tmp/fio#' $R/tmp/fio/global-and-job.fio
chroot $R sh -c "cd /tmp/fio && fio --output-format=json,normal global-and-job.fio" > fio$V-json-normal-write-randrw.txt 2>&1
chroot $R sh -c "cd /tmp/fio && fio --output-format=json,normal --numjobs=2 --rw=randread --bs=4k --size=8M --runtime=1 --time_based --ioengine=psync --directory=/tmp/fio --name=nj" > fio$V-numjobs2-randread-json-normal.txt 2>&1
chroot $R sh -c "cd /tmp/fio && fio --output-format=json --gtod_reduce=1 --rw=randwrite --bs=4k --size=16M --runtime=1 --time_based --ioengine=psync --directory=/tmp/fio --name=gtod" > fio$V-gtod-reduce-randwrite.json 2>&1
rm -rf $R/tmp/fio
