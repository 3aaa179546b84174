set -x
cd /tmp/pcorp/fio
D=/tmp/pcorp/work
fio --output-format=json global-randwrite.fio > fio3.33-global-randwrite.json 2>&1
fio --output-format=json global-and-job.fio > fio3.33-global-and-job-write-randrw.json
fio --rw=read --bs=128k --size=16M --runtime=1 --time_based --ioengine=psync --directory=$D --output-format=json --name=cli-read > fio3.33-cmdline-before-name-read.json
fio --output-format=json,normal global-and-job.fio > fio3.33-json-normal-write-randrw.txt
fio --output-format=json,normal --gtod_reduce=1 --rw=randread --bs=4k --size=16M --runtime=1 --time_based --ioengine=psync --directory=$D --name=gtod > fio3.33-gtod-reduce-randread-json-normal.txt
fio --output-format=json,normal --numjobs=2 --rw=randread --bs=4k --size=8M --runtime=1 --time_based --ioengine=psync --directory=$D --name=nj > fio3.33-numjobs2-randread-json-normal.txt
fio --output-format=json,normal --numjobs=2 --group_reporting --rw=write --bs=64k --size=8M --runtime=1 --time_based --ioengine=psync --directory=$D --name=njg > fio3.33-numjobs2-group-write-json-normal.txt
fio --output-format=json,normal --lat_percentiles=1 --rw=randwrite --bs=4k --size=16M --runtime=1 --time_based --ioengine=psync --directory=$D --name=latpct > fio3.33-lat-percentiles-randwrite-json-normal.txt
# trim needs a block device: a loop device over a sparse file
truncate -s 64M /tmp/pcorp/trim.img && LOOP=$(losetup -f --show /tmp/pcorp/trim.img)
fio --name=trimmer --filename=$LOOP --rw=trim --bs=64k --size=32M --ioengine=psync --output-format=json,normal > fio3.33-trim-loopdev-json-normal.txt 2>&1
fio --name=tw --filename=$LOOP --rw=trimwrite --bs=64k --size=32M --ioengine=psync --output-format=json > fio3.33-trimwrite-loopdev.json 2>&1
losetup -d $LOOP; rm /tmp/pcorp/trim.img
fio --output-format=json+ --rw=randread --bs=4k --size=16M --runtime=1 --time_based --ioengine=psync --directory=$D --name=jplus > fio3.33-json-plus-randread.json
